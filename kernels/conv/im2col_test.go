package conv

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIm2colSame compares the shifted-copy path with the general loop.
func TestIm2colSame(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 9))
	for _, tc := range []struct{ c, h, w, k, p int }{
		{2, 5, 4, 3, 1}, {1, 1, 1, 3, 1}, {3, 6, 6, 5, 2}, {2, 4, 7, 1, 0}, {1, 2, 3, 3, 1}, {2, 3, 3, 7, 3}, {1, 4, 2, 7, 3}, {1, 2, 1, 5, 2},
	} {
		src := randSlice(r, tc.c*tc.h*tc.w)
		oh := OutSize(tc.h, tc.k, 1, tc.p)
		n := tc.c * tc.k * tc.k * oh * tc.w
		want := make([]float32, n)
		got := make([]float32, n)
		for i := range got {
			got[i] = float32(i) // garbage that must be overwritten
		}
		refIm2col(want, src, tc.c, tc.h, tc.w, tc.k, tc.p)
		im2colSame(got, oh*tc.w, src, tc.h*tc.w, tc.c, tc.h, tc.w, tc.k, tc.k, tc.p)
		if !slices.Equal(got, want) {
			t.Errorf("%+v: im2colSame differs from the reference", tc)
		}
	}
}

// refIm2col is the definition of im2col for stride 1.
func refIm2col(col, src []float32, c, h, w, k, p int) {
	oh, ow := OutSize(h, k, 1, p), OutSize(w, k, 1, p)
	for ci := range c {
		for ki := range k {
			for kj := range k {
				for oi := range oh {
					for oj := range ow {
						ih, iw := oi-p+ki, oj-p+kj
						var v float32
						if ih >= 0 && ih < h && iw >= 0 && iw < w {
							v = src[(ci*h+ih)*w+iw]
						}
						col[(((ci*k+ki)*k+kj)*oh+oi)*ow+oj] = v
					}
				}
			}
		}
	}
}

// TestIm2colRandom compares im2col (both paths) with its definition and
// col2im with its adjoint on random geometries.
func TestIm2colRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for it := 0; it < 300; it++ {
		c, h, w := 1+r.IntN(3), 1+r.IntN(7), 1+r.IntN(7)
		k := 1 + r.IntN(5)
		s := 1 + r.IntN(3)
		p := r.IntN(k)
		oh, ow := OutSize(h, k, s, p), OutSize(w, k, s, p)
		if oh <= 0 || ow <= 0 {
			continue
		}
		src := randSlice(r, c*h*w)
		n := oh * ow
		got := make([]float32, c*k*k*n)
		for i := range got {
			got[i] = 99
		}
		im2col(got, n, src, h*w, c, h, w, k, k, s, p)
		for ci := range c {
			for ki := range k {
				for kj := range k {
					for oi := range oh {
						for oj := range ow {
							ih, iw := oi*s-p+ki, oj*s-p+kj
							var want float32
							if ih >= 0 && ih < h && iw >= 0 && iw < w {
								want = src[(ci*h+ih)*w+iw]
							}
							if g := got[((ci*k+ki)*k+kj)*n+oi*ow+oj]; g != want {
								t.Fatalf("c%d h%d w%d k%d s%d p%d: col[%d,%d,%d][%d,%d] = %g, want %g", c, h, w, k, s, p, ci, ki, kj, oi, oj, g, want)
							}
						}
					}
				}
			}
		}
		// <im2col(x), y> == <x, col2im(y)>.
		y := randSlice(r, c*k*k*n)
		back := make([]float32, c*h*w)
		col2im(back, h*w, y, n, c, h, w, k, k, s, p)
		var lhs, rhs float64
		for i := range y {
			lhs += float64(got[i]) * float64(y[i])
		}
		for i := range back {
			rhs += float64(src[i]) * float64(back[i])
		}
		if d := lhs - rhs; d > 1e-3 || d < -1e-3 {
			t.Fatalf("c%d h%d w%d k%d s%d p%d: col2im is not the adjoint of im2col: %g vs %g", c, h, w, k, s, p, lhs, rhs)
		}
	}
}
