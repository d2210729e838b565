package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWinoInputPlane checks that winoInput on maps wide enough for the
// split path gives the same bits through winoInputPlane as through the
// row-by-row path, for odd and even sizes, both layouts, serial and
// parallel, and a chunk of images that does not start at the first.
func TestWinoInputPlane(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for _, tc := range []struct {
		n, c, h, w, n0, cnt int
		xcm, par            bool
	}{
		{1, 1, 16, 16, 0, 1, true, false},
		{2, 3, 15, 17, 1, 1, true, false},
		{3, 2, 7, 16, 0, 3, false, false},
		{2, 4, 32, 32, 0, 2, true, true},
		{3, 5, 9, 31, 1, 2, false, true},
		{1, 2, 1, 15, 0, 1, true, false},
	} {
		t.Run(fmt.Sprintf("n%d-c%d-%dx%d-cm%v-par%v", tc.n, tc.c, tc.h, tc.w, tc.xcm, tc.par), func(t *testing.T) {
			g := geom{n: tc.n, cin: tc.c, h: tc.h, w: tc.w, cout: 1, k: 3, s: 1, p: 1, oh: tc.h, ow: tc.w, xcm: tc.xcm}
			th, tw := g.winoTiles()
			if tw < winoSplitTiles {
				t.Fatalf("tw %d below winoSplitTiles", tw)
			}
			x := randSlice(r, tc.n*tc.c*tc.h*tc.w)
			size := 16 * winoLd(tc.c, tc.cnt*th*tw)
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
