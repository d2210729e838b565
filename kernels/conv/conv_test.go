package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// conv3x3Ref is the definition: y[co][p] = sum over ci, kh, kw of
// w[co][ci][kh][kw] * x[ci][i+kh-1][j+kw-1] in float64, for the cnt images
// of h x w maps of channel-major x (planes ldx apart) into y (ldy apart).
func conv3x3Ref(y []float64, ldy int, x []float32, ldx int, w []float32, out, in, cnt, h, wd int) {
	for co := range out {
		for img := range cnt {
			for i := range h {
				for j := range wd {
					var s float64
					for ci := range in {
						for t := range 9 {
							ii, jj := i+t/3-1, j+t%3-1
							if ii < 0 || ii >= h || jj < 0 || jj >= wd {
								continue
							}
							s += float64(w[(co*in+ci)*9+t]) * float64(x[ci*ldx+(img*h+ii)*wd+jj])
						}
					}
					y[co*ldy+(img*h+i)*wd+j] = s
				}
			}
		}
	}
}

// wgradRef is the definition of the weight gradient, in float64.
func wgradRef(dw []float64, dy []float32, ldy int, x []float32, ldx int, out, in, cnt, h, wd int) {
	for co := range out {
		for ci := range in {
			for t := range 9 {
				var s float64
				for img := range cnt {
					for i := range h {
						for j := range wd {
							ii, jj := i+t/3-1, j+t%3-1
							if ii < 0 || ii >= h || jj < 0 || jj >= wd {
								continue
							}
							s += float64(dy[co*ldy+(img*h+i)*wd+j]) * float64(x[ci*ldx+(img*h+ii)*wd+jj])
						}
					}
				}
				dw[(co*in+ci)*9+t] = s
			}
		}
	}
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// near reports whether got is within atol + rtol*|want| of want, printing
// up to ten mismatches.
func near(t *testing.T, name string, got []float32, want []float64, scale float64) {
	t.Helper()
	bad := 0
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); d > 1e-5*scale+1e-5*math.Abs(w) || math.IsNaN(float64(got[i])) {
			if bad++; bad <= 10 {
				t.Errorf("%s[%d] = %g, want %g", name, i, got[i], w)
			}
		}
	}
	if bad > 10 {
		t.Fatalf("%s: %d mismatches", name, bad)
	}
}

// shapes are (out, in, images, h, w): the ResNet shapes, odd channel
// counts, images of one vector, tall and wide maps, widths that do not
// divide 16, and zero sizes.
var shapes = [][5]int{
	{16, 16, 3, 32, 32}, {32, 32, 2, 16, 16}, {64, 64, 5, 8, 8}, {16, 3, 2, 32, 32},
	{3, 16, 2, 32, 32}, {5, 7, 3, 4, 4}, {17, 9, 4, 8, 8}, {33, 2, 1, 16, 16},
	{8, 8, 3, 1, 16}, {8, 8, 3, 16, 1}, {7, 5, 2, 4, 12}, {9, 3, 3, 6, 8}, {24, 4, 1, 2, 24},
	{1, 1, 1, 4, 4}, {12, 12, 7, 4, 4}, {0, 4, 2, 4, 4}, {4, 0, 2, 4, 4}, {4, 4, 0, 4, 4},
}

// TestForward compares Forward (and its flipped filter, the input
// gradient) with the definition, storing and accumulating, on a chunk in
// the middle of a larger batch.
func TestForward(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		out, in, cnt, h, w := s[0], s[1], s[2], s[3], s[4]
		for _, flip := range []bool{false, true} {
			for _, acc := range []bool{false, true} {
				t.Run(fmt.Sprintf("out%d-in%d-n%d-%dx%d-flip%v-acc%v", out, in, cnt, h, w, flip, acc), func(t *testing.T) {
					pl := NewPlan(h, w)
					hw := h * w
					// The chunk is images [1, 1+cnt) of a batch of cnt+2.
					ld := (cnt + 2) * hw
					wt := randSlice(r, out*in*9)
					fo, fi := out, in
					if flip {
						fo, fi = in, out
					}
					x := randSlice(r, max(fi, 1)*ld)
					y := randSlice(r, max(fo, 1)*ld)
					y0 := append([]float32(nil), y...)
					f := PackFilter(make([]float32, FilterLen(fo, fi)+3), wt, out, in, flip)
					if f.Out() != fo || f.In() != fi {
						t.Fatalf("filter %dx%d, want %dx%d", f.Out(), f.In(), fo, fi)
					}
					Forward(pl, &f, y[hw:], ld, x[hw:], ld, cnt, acc)
					// The reference kernel of the flipped filter.
					wr := wt
					if flip {
						wr = make([]float32, len(wt))
						for o := range out {
							for i := range in {
								for k := range 9 {
									wr[(i*out+o)*9+8-k] = wt[(o*in+i)*9+k]
								}
							}
						}
					}
					want := make([]float64, len(y))
					for i, v := range y0 {
						want[i] = float64(v)
					}
					ref := make([]float64, len(y))
					conv3x3Ref(ref[hw:], ld, x[hw:], ld, wr, fo, fi, cnt, h, w)
					for co := range fo {
						for p := range cnt * hw {
							i := co*ld + hw + p
							if acc {
								want[i] += ref[i]
							} else {
								want[i] = ref[i]
							}
						}
					}
					near(t, "y", y, want, math.Sqrt(float64(9*fi)))
				})
			}
		}
	}
}

// TestWeightGrad compares WeightGrad with the definition, storing and
// accumulating.
func TestWeightGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range shapes {
		out, in, cnt, h, w := s[0], s[1], s[2], s[3], s[4]
		for _, acc := range []bool{false, true} {
			t.Run(fmt.Sprintf("out%d-in%d-n%d-%dx%d-acc%v", out, in, cnt, h, w, acc), func(t *testing.T) {
				pl := NewPlan(h, w)
				hw := h * w
				ld := (cnt + 2) * hw
				x := randSlice(r, max(in, 1)*ld)
				dy := randSlice(r, max(out, 1)*ld)
				dw := randSlice(r, out*in*9)
				want := make([]float64, len(dw))
				wgradRef(want, dy[hw:], ld, x[hw:], ld, out, in, cnt, h, w)
				if acc {
					for i, v := range dw {
						want[i] += float64(v)
					}
				}
				WeightGrad(pl, dw, dy[hw:], ld, x[hw:], ld, out, in, cnt, acc)
				near(t, "dw", dw, want, math.Sqrt(float64(cnt*hw)))
			})
		}
	}
}

// TestPlanPanics checks the map sizes NewPlan refuses.
func TestPlanPanics(t *testing.T) {
	for _, s := range [][2]int{{3, 3}, {0, 16}, {16, 0}, {5, 5}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewPlan(%d, %d) did not panic", s[0], s[1])
				}
			}()
			NewPlan(s[0], s[1])
		}()
		if Supported(s[0], s[1]) {
			t.Errorf("Supported(%d, %d)", s[0], s[1])
		}
	}
}
