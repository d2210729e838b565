package pool

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// TestMax checks MaxForward against the maximum of each window and
// MaxBackward against the gradient of each output sent to its maximum,
// stored and accumulated, with padding, odd sizes and windows partly
// outside the plane.
func TestMax(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, tc := range []struct{ planes, h, w, k, s, p int }{
		{1, 1, 1, 1, 1, 0}, {3, 7, 6, 3, 2, 1}, {2, 8, 8, 2, 2, 0}, {5, 5, 9, 3, 1, 1}, {4, 32, 32, 3, 2, 1},
	} {
		oh, ow := (tc.h+2*tc.p-tc.k)/tc.s+1, (tc.w+2*tc.p-tc.k)/tc.s+1
		g := Geom{Planes: tc.planes, H: tc.h, W: tc.w, OH: oh, OW: ow}
		x := randSlice(r, tc.planes*tc.h*tc.w)
		y := make([]float32, tc.planes*oh*ow)
		arg := make([]int32, len(y))
		MaxForward(g, tc.k, tc.s, tc.p, x, y, arg)
		dy := randSlice(r, len(y))
		want := make([]float32, len(x))
		for pl := range tc.planes {
			for oi := range oh {
				for oj := range ow {
					best, bi := float32(math.Inf(-1)), -1
					for a := range tc.k {
						for b := range tc.k {
							ih, iw := oi*tc.s-tc.p+a, oj*tc.s-tc.p+b
							if ih >= 0 && ih < tc.h && iw >= 0 && iw < tc.w && (bi < 0 || x[pl*tc.h*tc.w+ih*tc.w+iw] > best) {
								best, bi = x[pl*tc.h*tc.w+ih*tc.w+iw], ih*tc.w+iw
							}
						}
					}
					o := (pl*oh+oi)*ow + oj
					if y[o] != best || int(arg[o]) != bi {
						t.Fatalf("%+v: output %d = %v at %d, want %v at %d", tc, o, y[o], arg[o], best, bi)
					}
					want[pl*tc.h*tc.w+bi] += dy[o]
				}
			}
		}
		for _, acc := range []bool{false, true} {
			dx := randSlice(r, len(x))
			base := append([]float32(nil), dx...)
			MaxBackward(g, dx, dy, arg, acc)
			for i := range dx {
				w := want[i]
				if acc {
					w += base[i]
				}
				if math.Abs(float64(dx[i]-w)) > 1e-6 {
					t.Fatalf("%+v acc %v: dx[%d] = %v, want %v", tc, acc, i, dx[i], w)
				}
			}
		}
	}
}

// TestAdaptiveAvg checks AdaptiveAvgForward against the float64 mean of
// each window and AdaptiveAvgBackward against its adjoint (<y, dy> =
// <x, dx>), stored and accumulated, on grids that divide the plane, that do
// not (overlapping windows) and global pooling.
func TestAdaptiveAvg(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct{ planes, h, w, oh, ow int }{
		{1, 1, 1, 1, 1}, {3, 7, 6, 3, 2}, {2, 8, 8, 1, 1}, {4, 4, 4, 4, 4}, {2, 5, 9, 3, 4},
	} {
		g := Geom{Planes: tc.planes, H: tc.h, W: tc.w, OH: tc.oh, OW: tc.ow}
		x := randSlice(r, tc.planes*tc.h*tc.w)
		y := make([]float32, tc.planes*tc.oh*tc.ow)
		AdaptiveAvgForward(g, x, y)
		for pl := range tc.planes {
			for oi := range tc.oh {
				h0, h1 := oi*tc.h/tc.oh, ((oi+1)*tc.h+tc.oh-1)/tc.oh
				for oj := range tc.ow {
					w0, w1 := oj*tc.w/tc.ow, ((oj+1)*tc.w+tc.ow-1)/tc.ow
					var sum float64
					for ih := h0; ih < h1; ih++ {
						for iw := w0; iw < w1; iw++ {
							sum += float64(x[(pl*tc.h+ih)*tc.w+iw])
						}
					}
					want := sum / float64((h1-h0)*(w1-w0))
					if got := y[(pl*tc.oh+oi)*tc.ow+oj]; math.Abs(float64(got)-want) > 1e-5 {
						t.Fatalf("%+v: y[%d][%d][%d] = %v, want %v", tc, pl, oi, oj, got, want)
					}
				}
			}
		}
		dy := randSlice(r, len(y))
		for _, acc := range []bool{false, true} {
			dx := randSlice(r, len(x))
			base := append([]float32(nil), dx...)
			AdaptiveAvgBackward(g, dx, dy, acc)
			var lhs, rhs float64
			for i := range y {
				lhs += float64(y[i]) * float64(dy[i])
			}
			for i := range x {
				d := dx[i]
				if acc {
					d -= base[i]
				}
				rhs += float64(x[i]) * float64(d)
			}
			if math.Abs(lhs-rhs) > 1e-4*(1+math.Abs(lhs)) {
				t.Fatalf("%+v acc %v: <y, dy> = %v, <x, dx> = %v", tc, acc, lhs, rhs)
			}
		}
	}
}
