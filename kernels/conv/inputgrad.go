package conv

import "fmt"

// InputGrad computes the input gradient of the stride-2 convolution pl
// for a chunk of cnt images from the output gradient dy (planes ldy
// apart): dx (planes lddx apart, h x w maps) gets, added when acc,
//
//	dx[ci][2i+kh-1][2j+kw-1] += w[co][ci][kh][kw] * dy[co][i][j]
//
// summed over co, kh, kw, i, j. fs are the kernels of PackInputGradFilters;
// scratch holds PhasesLen(pl, in, cnt) floats: each phase of dx is
// computed by the forward kernels into it, then the phases are merged into
// dx. (At stride 1 the input gradient is Forward with a flipped filter.)
func InputGrad(pl *Plan, fs *InputGradFilters, dx []float32, lddx int, dy []float32, ldy int, scratch []float32, cnt int, acc bool) {
	if pl.stride != 2 {
		panic("conv.InputGrad: not a stride-2 plan")
	}
	in := fs[0].out
	n := cnt * pl.fwd.oh * pl.fwd.ow
	if in == 0 || n == 0 {
		return
	}
	if len(scratch) < PhasesLen(pl, in, cnt) {
		panic(fmt.Sprintf("conv.InputGrad: scratch holds %d floats, need %d", len(scratch), PhasesLen(pl, in, cnt)))
	}
	for ph := range fs {
		forwardGrid(pl.back[ph], &fs[ph], scratch[ph*n:], 4*n, dy, ldy, 0, cnt, false)
	}
	MergePhases(pl, dx, lddx, scratch, in, cnt, acc)
}
