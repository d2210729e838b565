package conv

import "fmt"

// Lanes is the number of output positions one vector holds.
const Lanes = 16

// minRun is the fewest vectors the mask table of a grid covers, so that
// the weight-gradient kernel runs over several small images per call.
const minRun = 64

// A tap reads source plane phase, shifted by dr rows and dc columns of the
// output grid: output (i, j) reads (i+dr, j+dc), zero outside the grid.
type tap struct{ phase, dr, dc int }

// grid describes one convolution the kernels run: taps over source
// planes, laid out like the oh x ow output grid, and for every vector of
// an image and every tap the mask of lanes whose input lies inside.
type grid struct {
	oh, ow int
	vpi    int // vectors per image
	rep    int // images the mask table covers
	taps   []tap
	// masks[g*9+t] is the mask of tap t for vector g of a run of rep
	// images, g < rep*vpi, followed by maxNV-1 rows that repeat the first
	// ones, so that a block of vectors starting anywhere in the run reads
	// its masks consecutively.
	masks []uint16
}

// newGrid computes the masks of taps on oh x ow maps.
func newGrid(oh, ow int, taps []tap) *grid {
	gr := &grid{oh: oh, ow: ow, vpi: oh * ow / Lanes, taps: taps}
	gr.rep = max(1, (minRun+gr.vpi-1)/gr.vpi)
	rows := gr.rep * gr.vpi
	gr.masks = make([]uint16, (rows+maxNV-1)*9)
	for g := range rows + maxNV - 1 {
		v := g % gr.vpi
		for t, tp := range taps {
			var m uint16
			for l := range Lanes {
				q := v*Lanes + l
				i, j := q/ow+tp.dr, q%ow+tp.dc
				if i >= 0 && i < oh && j >= 0 && j < ow {
					m |= 1 << l
				}
			}
			gr.masks[g*9+t] = m
		}
	}
	return gr
}

// offsets returns the tap offsets for source planes planeLen floats apart.
func (gr *grid) offsets(planeLen int) [9]int {
	var off [9]int
	for t, tp := range gr.taps {
		off[t] = tp.phase*planeLen + tp.dr*gr.ow + tp.dc
	}
	return off
}

// Plan holds what the kernels need to know about one convolution
// geometry: a 3x3 kernel with padding 1 and stride 1 or 2 over h x w
// input maps. A Plan is immutable and safe for concurrent use.
//
// With stride 2 the kernels read the input as four phase planes (even or
// odd rows times even or odd columns, see Phases), each the size of the
// output map, so that every tap is a shifted plane again.
type Plan struct {
	h, w, stride int
	fwd          *grid
	// back holds, with stride 2, the grids of the input gradient's four
	// phases (over the output gradient, one plane) and backTaps their
	// kernel taps: phase ph of dx gets sum over its taps t of the
	// transposed kernel's tap backTaps[ph][t] times the shifted dy.
	back     [4]*grid
	backTaps [4][]int
}

// Supported reports whether the kernels handle h x w maps at the given
// stride: a whole number of vectors per output map, and even maps for
// stride 2.
func Supported(h, w, stride int) bool {
	switch stride {
	case 1:
		return h > 0 && w > 0 && h*w%Lanes == 0
	case 2:
		return h > 0 && w > 0 && h%2 == 0 && w%2 == 0 && (h/2)*(w/2)%Lanes == 0
	}
	return false
}

// NewPlan returns the plan of 3x3 padding-1 convolutions of stride 1 or 2
// over h x w maps; it panics when !Supported(h, w, stride).
func NewPlan(h, w, stride int) *Plan {
	if !Supported(h, w, stride) {
		panic(fmt.Sprintf("conv.NewPlan: %dx%d maps at stride %d: the output is not a whole number of %d-position vectors", h, w, stride, Lanes))
	}
	pl := &Plan{h: h, w: w, stride: stride}
	taps := make([]tap, 9)
	if stride == 1 {
		for t := range taps {
			taps[t] = tap{0, t/3 - 1, t%3 - 1}
		}
		pl.fwd = newGrid(h, w, taps)
		return pl
	}
	// Kernel row kh reads input row 2i+kh-1: the odd phase a row up for
	// kh = 0, the even phase for 1, the odd phase for 2; columns alike.
	par := [3]int{1, 0, 1}
	up := [3]int{-1, 0, 0}
	for t := range taps {
		taps[t] = tap{par[t/3]*2 + par[t%3], up[t/3], up[t%3]}
	}
	pl.fwd = newGrid(h/2, w/2, taps)
	// The adjoint: input row 2a reads output row a through kh = 1; input
	// row 2a+1 reads output row a+1 through kh = 0 and row a through
	// kh = 2. Each phase of dx is a convolution of dy with those taps.
	rowTaps := [2][][2]int{{{1, 0}}, {{0, 1}, {2, 0}}} // (kh, shift) per parity
	for ph := range 4 {
		var bt []tap
		var ks []int
		for _, r := range rowTaps[ph/2] {
			for _, c := range rowTaps[ph%2] {
				bt = append(bt, tap{0, r[1], c[1]})
				ks = append(ks, r[0]*3+c[0])
			}
		}
		pl.back[ph] = newGrid(h/2, w/2, bt)
		pl.backTaps[ph] = ks
	}
	return pl
}

// H returns the input map height.
func (pl *Plan) H() int { return pl.h }

// W returns the input map width.
func (pl *Plan) W() int { return pl.w }

// Stride returns the stride.
func (pl *Plan) Stride() int { return pl.stride }

// OutH returns the output map height.
func (pl *Plan) OutH() int { return pl.fwd.oh }

// OutW returns the output map width.
func (pl *Plan) OutW() int { return pl.fwd.ow }
