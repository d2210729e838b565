package conv

import "fmt"

// Lanes is the number of output positions one vector holds.
const Lanes = 16

// minRun is the fewest vectors the mask table of a Plan covers, so that
// the weight-gradient kernel runs over several small images per call.
const minRun = 64

// Plan holds what the kernels need to know about one map size h x w: the
// offsets of the nine taps in the flattened image and, for every vector of
// an image and every tap, the mask of lanes whose input lies inside the
// image. A Plan is immutable and safe for concurrent use.
type Plan struct {
	h, w int
	vpi  int    // vectors per image
	rep  int    // images the mask table covers
	off  [9]int // (kh-1)*w + (kw-1)
	// masks[g*9+t] is the mask of tap t for vector g of a run of rep
	// images, g < rep*vpi, followed by maxNV-1 rows that repeat the first
	// ones, so that a block of vectors starting anywhere in the run reads
	// its masks consecutively.
	masks []uint16
}

// Supported reports whether the kernels handle h x w maps: a whole number
// of vectors per image.
func Supported(h, w int) bool { return h > 0 && w > 0 && h*w%Lanes == 0 }

// NewPlan returns the plan of h x w maps; it panics when !Supported(h, w).
func NewPlan(h, w int) *Plan {
	if !Supported(h, w) {
		panic(fmt.Sprintf("conv.NewPlan: %dx%d maps are not a whole number of %d-position vectors", h, w, Lanes))
	}
	pl := &Plan{h: h, w: w, vpi: h * w / Lanes}
	pl.rep = max(1, (minRun+pl.vpi-1)/pl.vpi)
	for t := range 9 {
		pl.off[t] = (t/3-1)*w + (t%3 - 1)
	}
	rows := pl.rep * pl.vpi
	pl.masks = make([]uint16, (rows+maxNV-1)*9)
	for g := range rows + maxNV - 1 {
		v := g % pl.vpi
		for t := range 9 {
			pl.masks[g*9+t] = pl.mask(v, t)
		}
	}
	return pl
}

// mask returns the lanes of vector v of an image whose input under tap t
// lies inside the image.
func (pl *Plan) mask(v, t int) uint16 {
	var m uint16
	for l := range Lanes {
		q := v*Lanes + l
		i, j := q/pl.w+t/3-1, q%pl.w+t%3-1
		if i >= 0 && i < pl.h && j >= 0 && j < pl.w {
			m |= 1 << l
		}
	}
	return m
}

// H returns the map height.
func (pl *Plan) H() int { return pl.h }

// W returns the map width.
func (pl *Plan) W() int { return pl.w }
