package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestATilesMap checks aTilesMap bit for bit against aTiles row by row on
// even maps of several sizes, including an empty one.
func TestATilesMap(t *testing.T) {
	for _, tc := range []struct{ th, tw int }{{0, 0}, {1, 1}, {1, 3}, {2, 2}, {3, 5}, {16, 16}} {
		t.Run(fmt.Sprint(tc.th, "x", tc.tw), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.th), uint64(tc.tw)))
			ow := 2 * tc.tw
			n := tc.th * tc.tw
			src := randSlice(r, 2*tc.th*ow+1)[:2*tc.th*ow]
			var got, want [16][]float32
			for xi := range got {
				got[xi], want[xi] = make([]float32, n), make([]float32, n)
			}
			aTilesMap(&got, src, tc.th, tc.tw)
			for ty := range tc.th {
				aTiles(&want, ty*tc.tw, tc.tw, src[2*ty*ow:][:ow], src[(2*ty+1)*ow:][:ow])
			}
			for xi := range got {
				for j := range n {
					if math.Float32bits(got[xi][j]) != math.Float32bits(want[xi][j]) {
						t.Fatalf("xi %d, tile %d: %v, want %v", xi, j, got[xi][j], want[xi][j])
					}
				}
			}
		})
	}
}
