package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWinoInput8x8 checks that winoInput on 8x8 maps gives the same bits
// through winoInput8x8 as through the general path, in both layouts, for
// a chunk of images that does not start at the first, serial and parallel.
func TestWinoInput8x8(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 7))
	for _, tc := range []struct {
		n, c, n0, cnt int
		xcm, par      bool
	}{{1, 1, 0, 1, true, false}, {3, 5, 1, 2, true, false}, {4, 3, 2, 2, false, false}, {2, 64, 0, 2, false, true}} {
		t.Run(fmt.Sprintf("n%d-c%d-cm%v-par%v", tc.n, tc.c, tc.xcm, tc.par), func(t *testing.T) {
			g := geom{n: tc.n, cin: tc.c, h: 8, w: 8, cout: 1, k: 3, s: 1, p: 1, oh: 8, ow: 8, xcm: tc.xcm}
			x := randSlice(r, tc.n*tc.c*64)
			size := 16 * winoLd(tc.c, tc.cnt*16)
			got, want := make([]float32, size), make([]float32, size)
			g.winoInput(got, x, tc.n0, tc.cnt, tc.par, nil)
			general := g
			general.winoGeneral = true
			general.winoInput(want, x, tc.n0, tc.cnt, tc.par, nil)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("v[%d] = %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

// TestWinoOutput8x8 checks that winoOutput on 8x8 maps gives the same
// bits through winoOutput8x8 as through the general path, in both output
// layouts, stored and accumulated, serial and parallel.
func TestWinoOutput8x8(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 8))
	for _, tc := range []struct {
		n, c, n0, cnt int
		ycm, acc, par bool
	}{{1, 1, 0, 1, true, false, false}, {3, 5, 1, 2, true, true, false}, {4, 3, 2, 2, false, false, false}, {2, 64, 0, 2, false, true, true}} {
		t.Run(fmt.Sprintf("n%d-c%d-cm%v-acc%v-par%v", tc.n, tc.c, tc.ycm, tc.acc, tc.par), func(t *testing.T) {
			g := geom{n: tc.n, cin: 1, h: 8, w: 8, cout: tc.c, k: 3, s: 1, p: 1, oh: 8, ow: 8}
			m := randSlice(r, 16*winoLd(tc.c, tc.cnt*16))
			got := randSlice(r, tc.n*tc.c*64)
			want := append([]float32(nil), got...)
			g.winoOutput(got, m, tc.n0, tc.cnt, tc.ycm, tc.acc, tc.par, nil)
			general := g
			general.winoGeneral = true
			general.winoOutput(want, m, tc.n0, tc.cnt, tc.ycm, tc.acc, tc.par, nil)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("y[%d] = %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}
