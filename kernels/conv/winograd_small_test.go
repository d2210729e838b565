package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWinoInput4x4 checks that winoInput on 4x4 maps gives the same bits
// through winoInput4x4 as through the general path, in both layouts, for
// a chunk of images that does not start at the first.
func TestWinoInput4x4(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		n, c, n0, cnt int
		xcm           bool
	}{{1, 1, 0, 1, true}, {3, 5, 1, 2, true}, {4, 3, 2, 2, false}, {2, 64, 0, 2, false}} {
		t.Run(fmt.Sprintf("n%d-c%d-cm%v", tc.n, tc.c, tc.xcm), func(t *testing.T) {
			g := geom{n: tc.n, cin: tc.c, h: 4, w: 4, cout: 1, k: 3, s: 1, p: 1, oh: 4, ow: 4, xcm: tc.xcm}
			x := randSlice(r, tc.n*tc.c*16)
			size := 16 * winoLd(tc.c, tc.cnt*4)
			got, want := make([]float32, size), make([]float32, size)
			g.winoInput(got, x, tc.n0, tc.cnt, false, nil)
			general := g
			general.winoGeneral = true
			general.winoInput(want, x, tc.n0, tc.cnt, false, nil)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("v[%d] = %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

// TestWinoOutput4x4 checks that winoOutput on 4x4 maps gives the same
// bits through winoOutput4x4 as through the general path, in both output
// layouts, stored and accumulated.
func TestWinoOutput4x4(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, tc := range []struct {
		n, c, n0, cnt int
		ycm, acc      bool
	}{{1, 1, 0, 1, true, false}, {3, 5, 1, 2, true, true}, {4, 3, 2, 2, false, false}, {2, 64, 0, 2, false, true}} {
		t.Run(fmt.Sprintf("n%d-c%d-cm%v-acc%v", tc.n, tc.c, tc.ycm, tc.acc), func(t *testing.T) {
			g := geom{n: tc.n, cin: 1, h: 4, w: 4, cout: tc.c, k: 3, s: 1, p: 1, oh: 4, ow: 4}
			m := randSlice(r, 16*winoLd(tc.c, tc.cnt*4))
			got := randSlice(r, tc.n*tc.c*16)
			want := append([]float32(nil), got...)
			g.winoOutput(got, m, tc.n0, tc.cnt, tc.ycm, tc.acc, false, nil)
			general := g
			general.winoGeneral = true
			general.winoOutput(want, m, tc.n0, tc.cnt, tc.ycm, tc.acc, false, nil)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("y[%d] = %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}
