package conv

import "fmt"

// Forward computes the 3x3 padding-1 convolution of a chunk of cnt images
// with the packed filter f: for every output channel co and position p of
// the chunk's output maps,
//
//	y[co*ldy+p] (+)= sum over ci, kh, kw of w[co][ci][kh][kw] * input(ci, p, kh, kw)
//
// the result added to y when acc, else stored. With stride 1, input(ci, p,
// kh, kw) is x[ci*ldx + p + (kh-1)*W + (kw-1)], zero outside each image;
// with stride 2, x holds the chunk's phase planes (Phases, ldx >=
// PhasesLen(1, cnt, ...)) and the input is read through them. x and y are
// channel-major chunks (see the package documentation).
func Forward(pl *Plan, f *Filter, y []float32, ldy int, x []float32, ldx int, cnt int, acc bool) {
	if f.ntap != len(pl.fwd.taps) {
		panic(fmt.Sprintf("conv.Forward: a filter of %d taps for a plan of %d", f.ntap, len(pl.fwd.taps)))
	}
	n := cnt * pl.fwd.oh * pl.fwd.ow
	if pl.stride == 2 && ldx < 4*n {
		panic(fmt.Sprintf("conv.Forward: ldx=%d is less than the chunk's four phase planes (%d floats)", ldx, 4*n))
	}
	forwardGrid(pl.fwd, f, y, ldy, x, ldx, n, cnt, acc)
}

// forwardGrid runs the forward kernels of grid gr over a chunk of cnt
// images whose source planes are planeLen floats apart.
func forwardGrid(gr *grid, f *Filter, y []float32, ldy int, x []float32, ldx, planeLen, cnt int, acc bool) {
	n := cnt * gr.oh * gr.ow
	if n == 0 || f.out == 0 {
		return
	}
	checkPlanes("y", y, ldy, f.out, n)
	if f.in == 0 {
		if !acc {
			for co := range f.out {
				clear(y[co*ldy:][:n])
			}
		}
		return
	}
	maxPhase := 0
	for _, t := range gr.taps {
		maxPhase = max(maxPhase, t.phase)
	}
	checkPlanes("x", x, ldx, f.in, maxPhase*planeLen+n)
	mr, nv := f.t.mr, f.t.nv
	kern := forwardKernel(f.t, f.bf16)
	off := gr.offsets(planeLen)
	ntap := len(gr.taps)
	nvec := cnt * gr.vpi
	var tmp [16 * maxNV * Lanes]float32
	var tmask [maxNV * 9]uint16
	accFlag := 0
	if acc {
		accFlag = 1
	}
	for g := 0; g < nvec; g += nv {
		masks := gr.masks[(g%(gr.rep*gr.vpi))*9:]
		whole := g+nv <= nvec
		if !whole {
			// The last block: the vectors past the chunk read nothing.
			clear(tmask[:])
			copy(tmask[:], masks[:(nvec-g)*9])
			masks = tmask[:]
		}
		xp := &x[g*Lanes]
		for b := 0; b*mr < f.out; b++ {
			w := &f.data[b*mr*ntap*f.in]
			rows := min(mr, f.out-b*mr)
			if whole && rows == mr {
				kern(f.in, ntap, xp, ldx, w, &off, &masks[0], &y[b*mr*ldy+g*Lanes], ldy, accFlag)
				continue
			}
			// An edge block: computed into tmp, then its valid part merged.
			ld := nv * Lanes
			kern(f.in, ntap, xp, ldx, w, &off, &masks[0], &tmp[0], ld, 0)
			cols := min(ld, n-g*Lanes)
			for r := range rows {
				dst := y[(b*mr+r)*ldy+g*Lanes:][:cols]
				src := tmp[r*ld:][:cols]
				if acc {
					for j, v := range src {
						dst[j] += v
					}
				} else {
					copy(dst, src)
				}
			}
		}
	}
}

// checkPlanes panics unless s holds planes planes of n floats, ld apart.
func checkPlanes(name string, s []float32, ld, planes, n int) {
	if ld < n {
		panic(fmt.Sprintf("conv: ld%s=%d is less than the chunk's %d positions", name, ld, n))
	}
	if planes > 0 && len(s) < (planes-1)*ld+n {
		panic(fmt.Sprintf("conv: len(%s)=%d, want >= %d for %d planes of %d floats %d apart", name, len(s), (planes-1)*ld+n, planes, n, ld))
	}
}
