package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/scratch"
	"github.com/duel-ssl/duel/kernels/gemm"
)

// convBF16Ref returns the three passes of the convolution s in float64 on
// the factors rounded to bfloat16, and each element's error scale (the
// sum of its products' magnitudes): y and dy channel-major, x and dx in
// s's layout, beta 0.
type convRefs struct{ y, yScale, dw, dwScale, dx, dxScale []float64 }

func convBF16Ref(s Shape, w, x, dy []float32) convRefs {
	return convRefWith(s, w, x, dy, func(v float32) float64 { return float64(gemm.RoundBF16(v)) })
}

// convRefWith is convBF16Ref with every factor mapped by rnd.
func convRefWith(s Shape, w, x, dy []float32, rnd func(float32) float64) convRefs {
	g := s.geom()
	hw, ohw := g.h*g.w, g.ohw()
	xAt := func(n, ci, i, j int) (int, bool) {
		if i < 0 || i >= g.h || j < 0 || j >= g.w {
			return 0, false
		}
		off, cs := g.image(n)
		return off + ci*cs + i*g.w + j, true
	}
	r := convRefs{
		y: make([]float64, g.cout*g.n*ohw), yScale: make([]float64, g.cout*g.n*ohw),
		dw: make([]float64, len(w)), dwScale: make([]float64, len(w)),
		dx: make([]float64, g.cin*g.n*hw), dxScale: make([]float64, g.cin*g.n*hw),
	}
	for n := range g.n {
		for co := range g.cout {
			for oi := range g.oh {
				for oj := range g.ow {
					yi := (co*g.n+n)*ohw + oi*g.ow + oj
					for ci := range g.cin {
						for ki := range g.k {
							for kj := range g.k {
								xi, ok := xAt(n, ci, oi*g.s-g.p+ki, oj*g.s-g.p+kj)
								if !ok {
									continue
								}
								wi := ((co*g.cin+ci)*g.k+ki)*g.k + kj
								p := rnd(w[wi]) * rnd(x[xi])
								r.y[yi] += p
								r.yScale[yi] += math.Abs(p)
								q := rnd(dy[yi]) * rnd(x[xi])
								r.dw[wi] += q
								r.dwScale[wi] += math.Abs(q)
								d := rnd(dy[yi]) * rnd(w[wi])
								r.dx[xi] += d
								r.dxScale[xi] += math.Abs(d)
							}
						}
					}
				}
			}
		}
	}
	return r
}

// nearBF16 fails the test where got is farther from want than float32
// sums of k products allow: (k+2) units of 2^-23 of the scale.
func nearBF16(t *testing.T, name string, got []float32, want, scale []float64, k int) {
	t.Helper()
	bad := 0
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); !(d <= float64(k+2)*0x1p-23*scale[i]+1e-30) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %g, want %g (error %.3g, scale %.3g)", name, i, got[i], w, d, scale[i])
			}
		}
	}
	if bad > 5 {
		t.Fatalf("%s: %d mismatches", name, bad)
	}
}

// TestIm2colBF16 runs the three GEMM passes in bfloat16, paired (channel
// pairs, image pairs) and not, on the shapes above and on pointwise,
// strided 1x1 and sample-major ones, storing and accumulating, against
// the float64 convolution of the rounded factors.
func TestIm2colBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	var cases []Shape
	for _, sh := range shapes {
		out, in, n, h, w, s := sh[0], sh[1], sh[2], sh[3], sh[4], sh[5]
		cases = append(cases, Shape{N: n, In: in, H: h, W: w, Out: out, K: 3, S: s, P: 1, ChannelMajor: true})
	}
	cases = append(cases,
		Shape{N: 3, In: 5, H: 8, W: 8, Out: 6, K: 3, S: 1, P: 1},                          // sample-major
		Shape{N: 3, In: 5, H: 8, W: 6, Out: 7, K: 3, S: 2, P: 1},                          // sample-major, strided
		Shape{N: 5, In: 7, H: 4, W: 4, Out: 6, K: 1, S: 1, P: 0, ChannelMajor: true},      // pointwise
		Shape{N: 5, In: 7, H: 4, W: 4, Out: 6, K: 1, S: 1, P: 0},                          // 1x1, sample-major
		Shape{N: 4, In: 6, H: 8, W: 8, Out: 9, K: 1, S: 2, P: 0, ChannelMajor: true},      // subsampling shortcut
		Shape{N: 3, In: 3, H: 9, W: 7, Out: 4, K: 5, S: 1, P: 2, ChannelMajor: true},      // 5x5
		Shape{N: 1, In: 3, H: 5, W: 5, Out: 2, K: 3, S: 1, P: 0},                          // one image, unpadded
		Shape{N: 10, In: 16, H: 32, W: 32, Out: 16, K: 3, S: 1, P: 1, ChannelMajor: true}, // coarsePlan's odd chunk of 3
	)
	for _, s := range cases {
		for _, mode := range []pairMode{pairAlways, pairNever} {
			name := fmt.Sprintf("%d-%d-n%d-%dx%d-k%d-s%d-cm%v/paired%v", s.In, s.Out, s.N, s.H, s.W, s.K, s.S, s.ChannelMajor, mode == pairAlways)
			t.Run(name, func(t *testing.T) {
				g := s.geom()
				g.bf16, g.pairing = true, mode
				w := randSlice(r, g.cout*g.ckk())
				x := randSlice(r, g.cin*g.n*g.h*g.w)
				dy := randSlice(r, g.cout*g.n*g.ohw())
				ref := convBF16Ref(s, w, x, dy)
				sc := new(scratch.Free)
				for _, acc := range []bool{false, true} {
					y := make([]float32, len(ref.y))
					gemmForward(sc, g, w, x, y)
					nearBF16(t, "y", y, ref.y, ref.yScale, g.ckk())
					dw := randSlice(r, len(w))
					dwWant, _ := accumulated(ref.dw, ref.dwScale, dw, acc)
					gemmWeightGrad(sc, g, x, dy, dw, acc)
					nearBF16(t, "dw", dw, dwWant, ref.dwScale, g.n*g.ohw()+g.n)
					dx := randSlice(r, len(x))
					dxWant, _ := accumulated(ref.dx, ref.dxScale, dx, acc)
					gemmInputGrad(sc, g, w, dy, dx, acc)
					nearBF16(t, "dx", dx, dxWant, ref.dxScale, g.cout*g.k*g.k+2)
				}
			})
		}
	}
}

// TestPairWeights checks both weight layouts of the paired paths against
// their definitions, odd channel counts included, and layers large enough
// to be split over goroutines (more than 2^15 weights).
func TestPairWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	bits := func(v float32) uint32 { return math.Float32bits(gemm.RoundBF16(v)) >> 16 }
	for _, d := range [][3]int{{1, 1, 1}, {3, 5, 9}, {4, 4, 9}, {2, 7, 1}, {5, 2, 25}, {131, 67, 9}, {66, 131, 9}} {
		out, in, kk := d[0], d[1], d[2]
		w := randSlice(r, out*in*kk)
		at := func(co, ci, t int) uint32 {
			if co >= out || ci >= in {
				return 0
			}
			return bits(w[(co*in+ci)*kk+t])
		}
		a := make([]float32, out*((in+1)/2)*kk)
		pairWeights(a, w, out, in, kk)
		for co := range out {
			for c := range (in + 1) / 2 {
				for tp := range kk {
					got := math.Float32bits(a[(co*((in+1)/2)+c)*kk+tp])
					if want := at(co, 2*c, tp) | at(co, 2*c+1, tp)<<16; got != want {
						t.Fatalf("pairWeights %v: (%d, %d, %d) = %#x, want %#x", d, co, c, tp, got, want)
					}
				}
			}
		}
		f := make([]float32, in*((out+1)/2)*kk)
		pairWeightsFlipped(f, w, out, in, kk)
		for ci := range in {
			for c := range (out + 1) / 2 {
				for tp := range kk {
					got := math.Float32bits(f[(ci*((out+1)/2)+c)*kk+tp])
					if want := at(2*c, ci, kk-1-tp) | at(2*c+1, ci, kk-1-tp)<<16; got != want {
						t.Fatalf("pairWeightsFlipped %v: (%d, %d, %d) = %#x, want %#x", d, ci, c, tp, got, want)
					}
				}
			}
		}
	}
}
