package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/scratch"
)

// TestDirectBF16 runs the three direct passes in bfloat16 on every shape
// of the direct kernels above (odd channel counts, odd batches, zero
// sizes, stride 2, maps of one row or column), channel-major and
// sample-major, storing and accumulating, against the float64 convolution
// of the rounded factors: on the VDPBF16PS kernels where the CPU has them,
// else on their Go loops.
func TestDirectBF16(t *testing.T) {
	t.Logf("bfloat16 assembly kernels: %v", FastBF16())
	r := rand.New(rand.NewPCG(31, 32))
	var cases []Shape
	for _, sh := range shapes {
		out, in, n, h, w, s := sh[0], sh[1], sh[2], sh[3], sh[4], sh[5]
		if !Supported(h, w, s) {
			continue
		}
		for _, cm := range []bool{true, false} {
			cases = append(cases, Shape{N: n, In: in, H: h, W: w, Out: out, K: 3, S: s, P: 1, ChannelMajor: cm})
		}
	}
	cases = append(cases,
		Shape{N: 9, In: 16, H: 32, W: 32, Out: 16, K: 3, S: 1, P: 1, ChannelMajor: true}, // chunks of an odd batch
		Shape{N: 7, In: 15, H: 16, W: 16, Out: 33, K: 3, S: 2, P: 1},                     // odd everything, strided
	)
	for _, s := range cases {
		name := fmt.Sprintf("%d-%d-n%d-%dx%d-s%d-cm%v", s.In, s.Out, s.N, s.H, s.W, s.S, s.ChannelMajor)
		t.Run(name, func(t *testing.T) { checkDirectBF16(t, r, s, false, true) })
	}
}

// checkDirectBF16 runs the three DirectBF16 passes of s on operands drawn
// from r, the gradients storing or accumulating (one run of each in accs),
// against the float64 convolution of the rounded factors.
func checkDirectBF16(t *testing.T, r *rand.Rand, s Shape, accs ...bool) {
	t.Helper()
	g := s.geom()
	pl := NewPlan(s.H, s.W, s.S)
	w := randSlice(r, g.cout*g.ckk())
	x := randSlice(r, g.cin*g.n*g.h*g.w)
	dy := randSlice(r, g.cout*g.n*g.ohw())
	ref := convBF16Ref(s, w, x, dy)
	sc := new(scratch.Free)
	y := make([]float32, len(ref.y))
	DirectForwardBF16(sc, s, pl, w, x, y)
	nearBF16(t, "y", y, ref.y, ref.yScale, g.ckk())
	for _, acc := range accs {
		dw, dx := randSlice(r, len(w)), randSlice(r, len(x))
		dwWant, dwScale := accumulated(ref.dw, ref.dwScale, dw, acc)
		DirectWeightGradBF16(sc, s, pl, x, dy, dw, acc)
		nearBF16(t, "dw", dw, dwWant, dwScale, g.n*g.ohw()+g.n)
		dxWant, dxScale := accumulated(ref.dx, ref.dxScale, dx, acc)
		DirectInputGradBF16(sc, s, pl, w, dy, dx, acc)
		nearBF16(t, "dx", dx, dxWant, dxScale, g.cout*9+2)
	}
}

// FuzzDirectBF16 runs the three DirectBF16 passes on small random shapes
// the direct kernels handle (maps of whole 16-position vectors at stride 1
// or 2, any channel and image counts up to 19, zero included, either
// layout), storing or accumulating, against the float64 convolution of the
// rounded factors, as TestDirectBF16 does on fixed shapes.
func FuzzDirectBF16(f *testing.F) {
	f.Add(uint8(3), uint8(5), uint8(7), uint8(0), uint8(0), uint64(1))
	f.Add(uint8(1), uint8(16), uint8(1), uint8(3), uint8(1), uint64(2))
	f.Add(uint8(0), uint8(2), uint8(3), uint8(5), uint8(2), uint64(3))
	f.Add(uint8(4), uint8(0), uint8(9), uint8(6), uint8(3), uint64(4))
	f.Fuzz(func(t *testing.T, n, in, out, geom, flags uint8, seed uint64) {
		// h x w maps of whole vectors at both strides (h*w/4 a multiple of 16).
		sizes := [][2]int{{8, 8}, {16, 8}, {8, 16}, {16, 16}, {4, 32}, {32, 4}, {2, 64}}
		hw := sizes[int(geom)%len(sizes)]
		s := Shape{N: int(n) % 20, In: int(in) % 20, Out: int(out) % 20, H: hw[0], W: hw[1], K: 3, S: 1 + int(flags)&1, P: 1, ChannelMajor: flags&2 != 0}
		if !Supported(s.H, s.W, s.S) {
			t.Skip()
		}
		checkDirectBF16(t, rand.New(rand.NewPCG(seed, 33)), s, flags&4 != 0)
	})
}

// accumulated returns the expected gradient and its error scale when a
// pass adds the reference want (error scale scale) into dst (acc), whose
// sum with what was there rounds too, or stores it.
func accumulated(want, scale []float64, dst []float32, acc bool) (w, sc []float64) {
	w, sc = append([]float64(nil), want...), append([]float64(nil), scale...)
	if acc {
		for i, v := range dst {
			w[i] += float64(v)
			sc[i] += math.Abs(float64(v))
		}
	}
	return w, sc
}

// TestPackTapsBF16 holds the fast bfloat16 filter packing to packTaps's
// scalar one, bit for bit: every tile, odd and zero channel counts, the
// flipped and transposed kernel, tap subsets, and values that round
// specially (ties, denormals, NaN, infinities); 67 x 129 is split over
// goroutines (par.Workers: more than 2^15 weights).
func TestPackTapsBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	special := []float32{0, float32(math.Copysign(0, -1)), 1.00390625, 1.01171875, 1e-40, -1e-40, float32(math.Inf(1)), float32(math.NaN()), 3.4e38}
	for _, tl := range []tile{{8, 3}, {4, 6}} {
		for _, c := range [][2]int{{1, 1}, {3, 5}, {8, 16}, {9, 7}, {17, 2}, {0, 4}, {4, 0}, {16, 33}, {67, 129}} {
			out, in := c[0], c[1]
			w := randSlice(r, out*in*9)
			for i := range w {
				if r.IntN(4) == 0 {
					w[i] = special[r.IntN(len(special))]
				}
			}
			for _, trans := range []bool{false, true} {
				for _, ks := range [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8}, {8, 7, 6, 5, 4, 3, 2, 1, 0}, {4}, {1, 7}, {0, 2, 6, 8}} {
					fo, fi := out, in
					if trans {
						fo, fi = in, out
					}
					n := filterLen(tl, fo, (fi+1)/2, len(ks))
					want := packTaps(tl, make([]float32, n), w, fo, fi, trans, ks, true)
					got := packTapsBF16(nil, tl, make([]float32, n), w, fo, fi, trans, ks)
					if got.out != want.out || got.in != want.in || got.ntap != want.ntap || !got.bf16 {
						t.Fatalf("tile %v %dx%d trans %v taps %v: filter %+v, want %+v", tl, fo, fi, trans, ks, got, want)
					}
					for i := range want.data {
						if math.Float32bits(got.data[i]) != math.Float32bits(want.data[i]) {
							t.Fatalf("tile %v %dx%d trans %v taps %v: word %d = %08x, want %08x", tl, fo, fi, trans, ks, i,
								math.Float32bits(got.data[i]), math.Float32bits(want.data[i]))
						}
					}
				}
			}
		}
	}
}

// TestPackTaps holds packTaps's float32 packing to Filter's definition:
// for each block of mr output channels, each tap of ks, each input
// channel, the mr weights, zero past the last output channel; trans reads
// the (in, out, 3, 3) weights transposed.
func TestPackTaps(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, tl := range []tile{{8, 3}, {4, 6}} {
		for _, c := range [][2]int{{1, 1}, {3, 5}, {8, 16}, {9, 7}, {17, 2}, {0, 4}, {4, 0}, {67, 129}} {
			out, in := c[0], c[1]
			w := randSlice(r, out*in*9)
			for _, trans := range []bool{false, true} {
				for _, ks := range [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8}, {8, 7, 6, 5, 4, 3, 2, 1, 0}, {4}, {1, 7}, {0, 2, 6, 8}} {
					n := filterLen(tl, out, in, len(ks))
					dst := randSlice(r, n) // stale values must not survive
					f := packTaps(tl, dst, w, out, in, trans, ks, false)
					mr := tl.mr
					for b := 0; b < (out+mr-1)/mr; b++ {
						for ti, k := range ks {
							for ci := range in {
								for rr := range mr {
									co := b*mr + rr
									want := float32(0)
									switch {
									case co >= out:
									case trans:
										want = w[(ci*out+co)*9+k]
									default:
										want = w[(co*in+ci)*9+k]
									}
									if got := f.data[((b*len(ks)+ti)*in+ci)*mr+rr]; got != want {
										t.Fatalf("tile %v %dx%d trans %v taps %v: block %d tap %d in %d row %d = %v, want %v", tl, out, in, trans, ks, b, k, ci, rr, got, want)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}
