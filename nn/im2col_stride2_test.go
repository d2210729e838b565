package nn

import (
	"math/rand/v2"
	"testing"
)

// TestIm2col3x3s2 compares im2col3x3s2 with the definition of im2col on
// even image sizes, several channels, a channel stride beyond the image
// and a row stride beyond the patch matrix's width (the extra columns must
// stay untouched).
func TestIm2col3x3s2(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct{ c, h, w, cpad, ldpad int }{
		{1, 2, 2, 0, 0}, {1, 2, 4, 0, 3}, {2, 4, 2, 5, 0}, {3, 4, 4, 0, 1},
		{2, 6, 8, 3, 2}, {16, 32, 32, 0, 0}, {1, 8, 2, 1, 7},
	} {
		cs := tc.h*tc.w + tc.cpad
		src := randTensor(r, tc.c*cs).Data()
		oh, ow := tc.h/2, tc.w/2
		n := oh * ow
		ld := n + tc.ldpad
		got := make([]float32, tc.c*9*ld)
		for i := range got {
			got[i] = 99
		}
		im2col3x3s2(got, ld, src, cs, tc.c, tc.h, tc.w)
		for ci := range tc.c {
			for ki := range 3 {
				for kj := range 3 {
					row := got[(ci*9+ki*3+kj)*ld:][:ld]
					for oi := range oh {
						for oj := range ow {
							ih, iw := 2*oi-1+ki, 2*oj-1+kj
							var want float32
							if ih >= 0 && ih < tc.h && iw >= 0 && iw < tc.w {
								want = src[ci*cs+ih*tc.w+iw]
							}
							if g := row[oi*ow+oj]; g != want {
								t.Fatalf("%+v: col[%d,%d,%d][%d,%d] = %g, want %g", tc, ci, ki, kj, oi, oj, g, want)
							}
						}
					}
					for j := n; j < ld; j++ {
						if row[j] != 99 {
							t.Fatalf("%+v: column %d beyond the patches written", tc, j)
						}
					}
				}
			}
		}
	}
}

// TestCol2im3x3s2 compares col2im3x3s2 with col2imGeneral (to float32
// rounding: the sums are taken in another order) on the shapes of
// TestIm2col3x3s2, adding into a nonzero image.
func TestCol2im3x3s2(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, tc := range []struct{ c, h, w, cpad, ldpad int }{
		{1, 2, 2, 0, 0}, {1, 2, 4, 0, 3}, {2, 4, 2, 5, 0}, {3, 4, 4, 0, 1},
		{2, 6, 8, 3, 2}, {16, 32, 32, 0, 0}, {1, 8, 2, 1, 7},
	} {
		cs := tc.h*tc.w + tc.cpad
		ld := (tc.h/2)*(tc.w/2) + tc.ldpad
		col := randTensor(r, tc.c*9*ld).Data()
		got := randTensor(r, tc.c*cs).Data()
		want := append([]float32(nil), got...)
		col2im3x3s2(got, cs, col, ld, tc.c, tc.h, tc.w)
		col2imGeneral(want, cs, col, ld, tc.c, tc.h, tc.w, 3, 3, 2, 1)
		for i := range want {
			if d := got[i] - want[i]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("%+v: dst[%d] = %g, want %g", tc, i, got[i], want[i])
			}
		}
	}
}
