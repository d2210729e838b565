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

// Filter is a 3x3 kernel packed for Forward: for each block of mr output
// channels, for each tap, for each input channel, the mr weights (zero
// past the last output channel).
type Filter struct {
	out, in int
	t       tile
	data    []float32
}

// Out returns the number of output channels.
func (f *Filter) Out() int { return f.out }

// In returns the number of input channels.
func (f *Filter) In() int { return f.in }

// FilterLen returns the floats PackFilter needs for a convolution from in
// to out channels.
func FilterLen(out, in int) int { return filterLen(tileFor(out), out, in) }

// filterLen is FilterLen for tile t.
func filterLen(t tile, out, in int) int { return (out + t.mr - 1) / t.mr * t.mr * 9 * in }

// PackFilter packs the (out, in, 3, 3) weights w into dst (FilterLen(out,
// in) floats) for Forward. With flip it packs instead the kernel of the
// input gradient of that convolution, from out to in channels: w'[i][o][a][b]
// = w[o][i][2-a][2-b].
func PackFilter(dst, w []float32, out, in int, flip bool) Filter {
	o := out
	if flip {
		o = in
	}
	return packFilter(tileFor(o), dst, w, out, in, flip)
}

// packFilter is PackFilter for tile t.
func packFilter(t tile, dst, w []float32, out, in int, flip bool) Filter {
	if len(w) < out*in*9 {
		panic(fmt.Sprintf("conv.PackFilter: %d weights for %d x %d x 3 x 3", len(w), out, in))
	}
	if flip {
		out, in = in, out
	}
	n := filterLen(t, out, in)
	if len(dst) < n {
		panic(fmt.Sprintf("conv.PackFilter: dst holds %d floats, need %d", len(dst), n))
	}
	f := Filter{out: out, in: in, t: t, data: dst[:n]}
	mr := f.t.mr
	for b := 0; b < (out+mr-1)/mr; b++ {
		blk := f.data[b*mr*9*in:]
		for t := range 9 {
			for ci := range in {
				row := blk[(t*in+ci)*mr:][:mr]
				for r := range row {
					co := b*mr + r
					switch {
					case co >= out:
						row[r] = 0
					case flip:
						row[r] = w[(ci*out+co)*9+8-t]
					default:
						row[r] = w[(co*in+ci)*9+t]
					}
				}
			}
		}
	}
	return f
}
