package conv

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/kernels/gemm"
)

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
// input channel, the mr weights (zero past the last output channel). A
// bf16 filter holds words instead, each the bfloat16 pair of input
// channels 2c (lower half) and 2c+1, for the kernels over word planes of
// the same pairs: in counts the pairs.
type Filter struct {
	out, in, ntap int
	t             tile
	bf16          bool
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
	return packTaps(tileFor(out), dst, w, out, in, flip, taps, false)
}

// FilterLenBF16 returns the words PackFilterBF16 needs for a convolution
// from in to out channels.
func FilterLenBF16(out, in int) int { return FilterLen(out, (in+1)/2) }

// PackFilterBF16 is PackFilter for the kernels over word planes of
// bfloat16 channel pairs: dst (FilterLenBF16(out, in) words, or with flip
// FilterLenBF16(in, out)) receives the weights rounded to bfloat16, paired
// as the input's channels are (the output's, with flip).
func PackFilterBF16(dst, w []float32, out, in int, flip bool) Filter {
	return packFilterBF16(nil, dst, w, out, in, flip)
}

// packFilterBF16 is PackFilterBF16 with its scratch from sc.
func packFilterBF16(sc Scratch, dst, w []float32, out, in int, flip bool) Filter {
	taps := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	if flip {
		taps = []int{8, 7, 6, 5, 4, 3, 2, 1, 0}
		out, in = in, out
	}
	return packTapsBF16(sc, tileFor(out), dst, w, out, in, flip, taps)
}

// packTapsBF16 is packTaps with bf16, bit for bit, faster: the weights
// are first paired by gemm.PairRuns into rows of words (pairWeights, or
// pairWeightsFlipped for trans: word c*9+t of row o the pair of input
// channels 2c and 2c+1 at tap t, or at tap 8-t), then copied into the
// kernels' order.
func packTapsBF16(sc Scratch, t tile, dst, w []float32, out, in int, trans bool, ks []int) Filter {
	if len(w) < out*in*9 {
		panic(fmt.Sprintf("conv: %d weights for %d x %d x 3 x 3", len(w), out, in))
	}
	cols := (in + 1) / 2
	n := filterLen(t, out, cols, len(ks))
	if len(dst) < n {
		panic(fmt.Sprintf("conv: filter buffer holds %d floats, need %d", len(dst), n))
	}
	f := Filter{out: out, in: cols, ntap: len(ks), t: t, bf16: true, data: dst[:n]}
	rows := get(sc, out*cols*9)
	defer put(sc, rows)
	if trans {
		pairWeightsFlipped(rows, w, in, out, 9)
	} else {
		pairWeights(rows, w, out, in, 9)
	}
	mr := t.mr
	blocks := (out + mr - 1) / mr
	parallelFor(blocks, workers(out*cols*len(ks)), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			blk := f.data[b*mr*len(ks)*cols:]
			for ti, k := range ks {
				if trans {
					k = 8 - k
				}
				for c := range cols {
					dr := blk[(ti*cols+c)*mr:][:mr]
					for r := range dr {
						if co := b*mr + r; co < out {
							dr[r] = rows[(co*cols+c)*9+k]
						} else {
							dr[r] = 0
						}
					}
				}
			}
		}
	})
	return f
}

// pairWord returns the word of the bfloat16 pair of lo (lower half) and
// hi, each rounded as gemm.RoundBF16 rounds, as float32 bits.
func pairWord(lo, hi float32) float32 {
	l, h := math.Float32bits(gemm.RoundBF16(lo))>>16, math.Float32bits(gemm.RoundBF16(hi))>>16
	return math.Float32frombits(l | h<<16)
}

// packTaps packs, for tile t, the taps ks of the (out, in, 3, 3) weights
// w, or with trans of the (in, out, 3, 3) weights w transposed (the
// kernel from out to in channels of its input gradient), into dst; with
// bf16 as words of input-channel pairs (Filter), one scalar rounding at a
// time (packTapsBF16 is the fast form; this one is its reference).
func packTaps(t tile, dst, w []float32, out, in int, trans bool, ks []int, bf16 bool) Filter {
	if len(w) < out*in*9 {
		panic(fmt.Sprintf("conv: %d weights for %d x %d x 3 x 3", len(w), out, in))
	}
	cols := in
	if bf16 {
		cols = (in + 1) / 2
	}
	n := filterLen(t, out, cols, len(ks))
	if len(dst) < n {
		panic(fmt.Sprintf("conv: filter buffer holds %d floats, need %d", len(dst), n))
	}
	f := Filter{out: out, in: cols, ntap: len(ks), t: t, bf16: bf16, data: dst[:n]}
	mr, ntap := t.mr, len(ks)
	if !bf16 {
		// In the filter's order: the mr weights of a row are the weights
		// of consecutive output channels, in*9 floats apart (9 with trans).
		step, stepCI := in*9, 9
		if trans {
			step, stepCI = 9, out*9
		}
		blocks := (out + mr - 1) / mr
		parallelFor(blocks, workers(out*in*ntap), func(lo, hi int) {
			for b := lo; b < hi; b++ {
				blk := f.data[b*mr*ntap*in:]
				rows := min(mr, out-b*mr)
				for ti, k := range ks {
					for ci := range in {
						row := blk[(ti*in+ci)*mr:][:mr]
						src := b*mr*step + ci*stepCI + k
						for r := range rows {
							row[r] = w[src+r*step]
						}
						clear(row[rows:])
					}
				}
			}
		})
		return f
	}
	weight := func(co, ci, k int) float32 {
		switch {
		case co >= out || ci >= in:
			return 0
		case trans:
			return w[(ci*out+co)*9+k]
		default:
			return w[(co*in+ci)*9+k]
		}
	}
	for b := 0; b < (out+mr-1)/mr; b++ {
		blk := f.data[b*mr*ntap*cols:]
		for ti, k := range ks {
			for c := range cols {
				row := blk[(ti*cols+c)*mr:][:mr]
				for r := range row {
					row[r] = pairWord(weight(b*mr+r, 2*c, k), weight(b*mr+r, 2*c+1, k))
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
		fs[ph] = packTaps(t, dst, w, in, out, true, pl.backTaps[ph], false)
		dst = dst[len(fs[ph].data):]
	}
	return fs
}

// InputGradFiltersLenBF16 returns the words PackInputGradFiltersBF16
// needs for the convolution from in to out channels.
func InputGradFiltersLenBF16(out, in int) int { return InputGradFiltersLen((out+1)/2, in) }

// PackInputGradFiltersBF16 is PackInputGradFilters for the kernels over
// word planes of bfloat16 pairs of the output gradient's channels.
func PackInputGradFiltersBF16(pl *Plan, dst, w []float32, out, in int) InputGradFilters {
	return packInputGradFiltersBF16(nil, pl, dst, w, out, in)
}

// packInputGradFiltersBF16 is PackInputGradFiltersBF16 with its scratch
// from sc.
func packInputGradFiltersBF16(sc Scratch, pl *Plan, dst, w []float32, out, in int) InputGradFilters {
	if pl.stride != 2 {
		panic("conv.PackInputGradFiltersBF16: not a stride-2 plan")
	}
	var fs InputGradFilters
	t := tileFor(in)
	for ph := range fs {
		fs[ph] = packTapsBF16(sc, t, dst, w, in, out, true, pl.backTaps[ph])
		dst = dst[len(fs[ph].data):]
	}
	return fs
}
