package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// convRef is the definition: y[co][img][i][j] = sum over ci, kh, kw of
// w[co][ci][kh][kw] * x[ci][img][s*i+kh-1][s*j+kw-1] in float64, zero
// outside the h x w maps, for channel-major x (planes ldx apart) into y
// (ldy apart).
func convRef(y []float64, ldy int, x []float32, ldx int, w []float32, out, in, cnt, h, wd, s int) {
	oh, ow := (h-1)/s+1, (wd-1)/s+1
	for co := range out {
		for img := range cnt {
			for i := range oh {
				for j := range ow {
					var sum float64
					for ci := range in {
						for t := range 9 {
							ii, jj := s*i+t/3-1, s*j+t%3-1
							if ii < 0 || ii >= h || jj < 0 || jj >= wd {
								continue
							}
							sum += float64(w[(co*in+ci)*9+t]) * float64(x[ci*ldx+(img*h+ii)*wd+jj])
						}
					}
					y[co*ldy+(img*oh+i)*ow+j] = sum
				}
			}
		}
	}
}

// inputGradRef is the adjoint of convRef: dx[ci][img][s*i+kh-1][s*j+kw-1]
// += w[co][ci][kh][kw] * dy[co][img][i][j], in float64.
func inputGradRef(dx []float64, lddx int, dy []float32, ldy int, w []float32, out, in, cnt, h, wd, s int) {
	oh, ow := (h-1)/s+1, (wd-1)/s+1
	for co := range out {
		for img := range cnt {
			for i := range oh {
				for j := range ow {
					g := float64(dy[co*ldy+(img*oh+i)*ow+j])
					for ci := range in {
						for t := range 9 {
							ii, jj := s*i+t/3-1, s*j+t%3-1
							if ii < 0 || ii >= h || jj < 0 || jj >= wd {
								continue
							}
							dx[ci*lddx+(img*h+ii)*wd+jj] += float64(w[(co*in+ci)*9+t]) * g
						}
					}
				}
			}
		}
	}
}

// wgradRef is the definition of the weight gradient, in float64.
func wgradRef(dw []float64, dy []float32, ldy int, x []float32, ldx int, out, in, cnt, h, wd, s int) {
	oh, ow := (h-1)/s+1, (wd-1)/s+1
	for co := range out {
		for ci := range in {
			for t := range 9 {
				var sum float64
				for img := range cnt {
					for i := range oh {
						for j := range ow {
							ii, jj := s*i+t/3-1, s*j+t%3-1
							if ii < 0 || ii >= h || jj < 0 || jj >= wd {
								continue
							}
							sum += float64(dy[co*ldy+(img*oh+i)*ow+j]) * float64(x[ci*ldx+(img*h+ii)*wd+jj])
						}
					}
				}
				dw[(co*in+ci)*9+t] = sum
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

// near reports elements of got farther than 1e-5*(scale + |want|) from
// want, at most ten, and fails the test.
func near(t *testing.T, name string, got []float32, want []float64, scale float64) {
	t.Helper()
	bad := 0
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); !(d <= 1e-5*scale+1e-5*math.Abs(w)) {
			if bad++; bad <= 10 {
				t.Errorf("%s[%d] = %g, want %g", name, i, got[i], w)
			}
		}
	}
	if bad > 10 {
		t.Fatalf("%s: %d mismatches", name, bad)
	}
}

// shapes are (out, in, images, h, w, stride): the ResNet shapes, odd
// channel counts, images of one vector, tall and wide maps, widths that do
// not divide 16, and zero sizes.
var shapes = [][6]int{
	{16, 16, 3, 32, 32, 1}, {32, 32, 2, 16, 16, 1}, {64, 64, 5, 8, 8, 1}, {16, 3, 2, 32, 32, 1},
	{3, 16, 2, 32, 32, 1}, {5, 7, 3, 4, 4, 1}, {17, 9, 4, 8, 8, 1}, {33, 2, 1, 16, 16, 1},
	{8, 8, 3, 1, 16, 1}, {8, 8, 3, 16, 1, 1}, {7, 5, 2, 4, 12, 1}, {9, 3, 3, 6, 8, 1}, {24, 4, 1, 2, 24, 1},
	{1, 1, 1, 4, 4, 1}, {12, 12, 7, 4, 4, 1}, {0, 4, 2, 4, 4, 1}, {4, 0, 2, 4, 4, 1}, {4, 4, 0, 4, 4, 1},
	{32, 16, 3, 32, 32, 2}, {64, 32, 2, 16, 16, 2}, {128, 64, 5, 8, 8, 2}, {5, 7, 3, 8, 8, 2},
	{9, 3, 2, 2, 32, 2}, {3, 5, 2, 32, 2, 2}, {7, 6, 3, 8, 24, 2}, {1, 1, 1, 8, 8, 2},
	{0, 3, 2, 8, 8, 2}, {3, 0, 2, 8, 8, 2}, {3, 3, 0, 8, 8, 2},
}

// TestForward compares Forward (and, at stride 1, its flipped filter, the
// input gradient; at stride 2 InputGrad) with the definitions, storing and
// accumulating, on a chunk in the middle of a larger batch.
func TestForward(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range shapes {
		out, in, cnt, h, w, s := sh[0], sh[1], sh[2], sh[3], sh[4], sh[5]
		for _, back := range []bool{false, true} {
			for _, acc := range []bool{false, true} {
				t.Run(fmt.Sprintf("out%d-in%d-n%d-%dx%d-s%d-back%v-acc%v", out, in, cnt, h, w, s, back, acc), func(t *testing.T) {
					pl := NewPlan(h, w, s)
					hw, ohw := h*w, pl.OutH()*pl.OutW()
					// The chunk is images [1, 1+cnt) of a batch of cnt+2.
					ldi, ldo := (cnt+2)*hw, (cnt+2)*ohw
					wt := randSlice(r, out*in*9)
					x := randSlice(r, max(in, 1)*ldi)
					dy := randSlice(r, max(out, 1)*ldo)
					// got is a batch of planes ld apart; the chunk is
					// [per, per+cnt*per) of each plane.
					var got []float32
					var ref []float64
					var per, ld, planes int
					if !back {
						got, per, ld, planes = randSlice(r, max(out, 1)*ldo), ohw, ldo, out
					} else {
						got, per, ld, planes = randSlice(r, max(in, 1)*ldi), hw, ldi, in
					}
					got0 := append([]float32(nil), got...)
					ref = make([]float64, len(got))
					switch {
					case !back:
						convRef(ref[ohw:], ldo, x[hw:], ldi, wt, out, in, cnt, h, w, s)
						f := PackFilter(make([]float32, FilterLen(out, in)+3), wt, out, in, false)
						xs, ldx := x[hw:], ldi
						if s == 2 {
							xs, ldx = make([]float32, PhasesLen(pl, in, cnt)), 4*cnt*ohw
							Phases(pl, xs, x[hw:], ldi, in, cnt)
						}
						Forward(pl, &f, got[ohw:], ldo, xs, ldx, cnt, acc)
					case s == 1:
						inputGradRef(ref[hw:], ldi, dy[ohw:], ldo, wt, out, in, cnt, h, w, s)
						f := PackFilter(make([]float32, FilterLen(in, out)), wt, out, in, true)
						if f.Out() != in || f.In() != out {
							t.Fatalf("filter %dx%d, want %dx%d", f.Out(), f.In(), in, out)
						}
						Forward(pl, &f, got[hw:], ldi, dy[ohw:], ldo, cnt, acc)
					default:
						inputGradRef(ref[hw:], ldi, dy[ohw:], ldo, wt, out, in, cnt, h, w, s)
						fs := PackInputGradFilters(pl, make([]float32, InputGradFiltersLen(out, in)), wt, out, in)
						InputGrad(pl, &fs, got[hw:], ldi, dy[ohw:], ldo, make([]float32, PhasesLen(pl, in, cnt)), cnt, acc)
					}
					want := make([]float64, len(got))
					for i, v := range got0 {
						p := i % ld
						switch {
						case p < per || p >= per+cnt*per || i/ld >= planes:
							want[i] = float64(v)
						case acc:
							want[i] = ref[i] + float64(v)
						default:
							want[i] = ref[i]
						}
					}
					near(t, "y", got, want, math.Sqrt(float64(9*max(in, out))))
				})
			}
		}
	}
}

// TestWeightGrad compares WeightGrad with the definition, storing and
// accumulating.
func TestWeightGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range shapes {
		out, in, cnt, h, w, s := sh[0], sh[1], sh[2], sh[3], sh[4], sh[5]
		for _, acc := range []bool{false, true} {
			t.Run(fmt.Sprintf("out%d-in%d-n%d-%dx%d-s%d-acc%v", out, in, cnt, h, w, s, acc), func(t *testing.T) {
				pl := NewPlan(h, w, s)
				hw, ohw := h*w, pl.OutH()*pl.OutW()
				ldi, ldo := (cnt+2)*hw, (cnt+2)*ohw
				x := randSlice(r, max(in, 1)*ldi)
				dy := randSlice(r, max(out, 1)*ldo)
				dw := randSlice(r, out*in*9)
				want := make([]float64, len(dw))
				wgradRef(want, dy[ohw:], ldo, x[hw:], ldi, out, in, cnt, h, w, s)
				if acc {
					for i, v := range dw {
						want[i] += float64(v)
					}
				}
				xs, ldx := x[hw:], ldi
				if s == 2 {
					xs, ldx = make([]float32, PhasesLen(pl, in, cnt)), 4*cnt*ohw
					Phases(pl, xs, x[hw:], ldi, in, cnt)
				}
				WeightGrad(pl, dw, dy[ohw:], ldo, xs, ldx, out, in, cnt, acc)
				near(t, "dw", dw, want, math.Sqrt(float64(cnt*ohw)))
			})
		}
	}
}

// TestPhases checks that MergePhases inverts Phases and accumulates.
func TestPhases(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pl := NewPlan(8, 16, 2)
	const c, cnt = 3, 2
	ld := 3 * 8 * 16
	x := randSlice(r, c*ld)
	ph := make([]float32, PhasesLen(pl, c, cnt))
	Phases(pl, ph, x, ld, c, cnt)
	if got, want := ph[0*4*cnt*32+1*cnt*32+5], x[0*ld+0*16+11]; got != want {
		t.Fatalf("EO phase [0][5] = %v, want x[0][0][11] = %v", got, want)
	}
	y := make([]float32, len(x))
	MergePhases(pl, y, ld, ph, c, cnt, false)
	MergePhases(pl, y, ld, ph, c, cnt, true)
	for ci := range c {
		for p := range cnt * 128 {
			if y[ci*ld+p] != 2*x[ci*ld+p] {
				t.Fatalf("[%d][%d] = %v, want %v", ci, p, y[ci*ld+p], 2*x[ci*ld+p])
			}
		}
	}
}

// TestPlanPanics checks the geometries NewPlan refuses.
func TestPlanPanics(t *testing.T) {
	for _, s := range [][3]int{{3, 3, 1}, {0, 16, 1}, {16, 0, 1}, {5, 5, 1}, {8, 4, 2}, {9, 16, 2}, {16, 16, 3}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewPlan(%d, %d, %d) did not panic", s[0], s[1], s[2])
				}
			}()
			NewPlan(s[0], s[1], s[2])
		}()
		if Supported(s[0], s[1], s[2]) {
			t.Errorf("Supported(%d, %d, %d)", s[0], s[1], s[2])
		}
	}
}
