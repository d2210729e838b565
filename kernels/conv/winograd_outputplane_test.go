package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWinoOutputPlane checks that winoOutput on maps wide enough for the
// split path gives the same bits through winoOutputPlane as through the
// row-by-row path, for odd and even sizes, both output layouts, stored and
// accumulated, serial and parallel, and a chunk of images that does not
// start at the first.
func TestWinoOutputPlane(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 10))
	for _, tc := range []struct {
		n, c, oh, ow, n0, cnt int
		ycm, acc, par         bool
	}{
		{1, 1, 16, 16, 0, 1, true, false, false},
		{2, 3, 15, 17, 1, 1, true, true, false},
		{3, 2, 7, 16, 0, 3, false, false, false},
		{2, 4, 32, 32, 0, 2, false, true, true},
		{3, 5, 9, 31, 1, 2, true, false, true},
		{1, 2, 1, 15, 0, 1, false, true, false},
	} {
		t.Run(fmt.Sprintf("n%d-c%d-%dx%d-cm%v-acc%v-par%v", tc.n, tc.c, tc.oh, tc.ow, tc.ycm, tc.acc, tc.par), func(t *testing.T) {
			g := geom{n: tc.n, cin: 1, h: tc.oh, w: tc.ow, cout: tc.c, k: 3, s: 1, p: 1, oh: tc.oh, ow: tc.ow}
			th, tw := g.winoTiles()
			if tw < winoSplitTiles {
				t.Fatalf("tw %d below winoSplitTiles", tw)
			}
			m := randSlice(r, 16*winoLd(tc.c, tc.cnt*th*tw))
			got := randSlice(r, tc.n*tc.c*tc.oh*tc.ow)
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
