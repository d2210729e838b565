package conv

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
		src := randSlice(r, tc.c*cs)
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
		col := randSlice(r, tc.c*9*ld)
		got := randSlice(r, tc.c*cs)
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

// TestUpsampleImages checks the input gradient of a subsampling (1x1
// stride-2) convolution against col2im, storing and adding, in both
// layouts.
func TestUpsampleImages(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, cm := range []bool{false, true} {
		for _, acc := range []bool{false, true} {
			g := geom{n: 5, cin: 3, h: 8, w: 6, cout: 4, k: 1, s: 2, p: 0, oh: 4, ow: 3, xcm: cm}
			if !g.subsample() {
				t.Fatal("not a subsampling geometry")
			}
			const n0, cnt = 1, 3
			dcol := randSlice(r, g.cin*cnt*g.ohw())
			got := randSlice(r, g.n*g.cin*g.h*g.w)
			want := append([]float32(nil), got...)
			if !acc {
				// col2im adds: the images of the chunk start from zero.
				for j := n0; j < n0+cnt; j++ {
					off, cs := g.image(j)
					for ci := range g.cin {
						clear(want[off+ci*cs:][:g.h*g.w])
					}
				}
			}
			g.col2imImages(want, dcol, n0, cnt, false)
			g.upsampleImages(got, dcol, n0, cnt, false, acc)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("cm %v acc %v: [%d] = %v, want %v", cm, acc, i, got[i], want[i])
				}
			}
		}
	}
}
