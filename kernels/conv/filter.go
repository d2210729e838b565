package conv

import "fmt"

// tile is a forward register tile: mr output channels by nv vectors.
type tile struct{ mr, nv int }

// maxNV is the most vectors a forward tile holds.
const maxNV = 6

// tileFor returns the forward tile for out output channels: 8x3 (11
// loads per 24 FMAs, the fastest on the ResNet shapes in
// BenchmarkForwardTiles), or 4x6 when it pads out to fewer rows.
func tileFor(out int) tile {
	if (out+3)/4*4 < (out+7)/8*8 {
		return tile{4, 6}
	}
	return tile{8, 3}
}

// Filter is a 3x3 kernel (or some of its taps) packed for the forward
// kernels: for each block of mr output channels, for each tap, for each
// input channel, the mr weights (zero past the last output channel).
type Filter struct {
	out, in, ntap int
	t             tile
	data          []float32
}

// Out returns the number of output channels.
func (f *Filter) Out() int { return f.out }

// In returns the number of input channels.
func (f *Filter) In() int { return f.in }

// FilterLen returns the floats PackFilter needs for a convolution from in
// to out channels.
func FilterLen(out, in int) int { return filterLen(tileFor(out), out, in, 9) }

// filterLen is the length of a filter of ntap taps for tile t.
func filterLen(t tile, out, in, ntap int) int { return (out + t.mr - 1) / t.mr * t.mr * ntap * in }

// PackFilter packs the (out, in, 3, 3) weights w into dst (FilterLen(out,
// in) floats) for Forward. With flip it packs instead the kernel of the
// input gradient of that convolution at stride 1, from out to in channels:
// w'[i][o][a][b] = w[o][i][2-a][2-b].
func PackFilter(dst, w []float32, out, in int, flip bool) Filter {
	taps := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	if flip {
		taps = []int{8, 7, 6, 5, 4, 3, 2, 1, 0}
		out, in = in, out
	}
	return packTaps(tileFor(out), dst, w, out, in, flip, taps)
}

// packTaps packs, for tile t, the taps ks of the (out, in, 3, 3) weights
// w, or with trans of the (in, out, 3, 3) weights w transposed (the
// kernel from out to in channels of its input gradient), into dst.
func packTaps(t tile, dst, w []float32, out, in int, trans bool, ks []int) Filter {
	if len(w) < out*in*9 {
		panic(fmt.Sprintf("conv: %d weights for %d x %d x 3 x 3", len(w), out, in))
	}
	n := filterLen(t, out, in, len(ks))
	if len(dst) < n {
		panic(fmt.Sprintf("conv: filter buffer holds %d floats, need %d", len(dst), n))
	}
	f := Filter{out: out, in: in, ntap: len(ks), t: t, data: dst[:n]}
	mr := t.mr
	for b := 0; b < (out+mr-1)/mr; b++ {
		blk := f.data[b*mr*len(ks)*in:]
		for ti, k := range ks {
			for ci := range in {
				row := blk[(ti*in+ci)*mr:][:mr]
				for r := range row {
					co := b*mr + r
					switch {
					case co >= out:
						row[r] = 0
					case trans:
						row[r] = w[(ci*out+co)*9+k]
					default:
						row[r] = w[(co*in+ci)*9+k]
					}
				}
			}
		}
	}
	return f
}

// InputGradFilters holds the packed kernels of the input gradient of a
// stride-2 convolution, one per phase of the input.
type InputGradFilters [4]Filter

// InputGradFiltersLen returns the floats PackInputGradFilters needs for
// the convolution from in to out channels.
func InputGradFiltersLen(out, in int) int {
	t := tileFor(in)
	return filterLen(t, in, out, 1) + 2*filterLen(t, in, out, 2) + filterLen(t, in, out, 4)
}

// PackInputGradFilters packs into dst (InputGradFiltersLen floats) the
// kernels of the input gradient of the stride-2 convolution pl with the
// (out, in, 3, 3) weights w.
func PackInputGradFilters(pl *Plan, dst, w []float32, out, in int) InputGradFilters {
	if pl.stride != 2 {
		panic("conv.PackInputGradFilters: not a stride-2 plan")
	}
	var fs InputGradFilters
	t := tileFor(in)
	for ph := range fs {
		fs[ph] = packTaps(t, dst, w, in, out, true, pl.backTaps[ph])
		dst = dst[len(fs[ph].data):]
	}
	return fs
}
