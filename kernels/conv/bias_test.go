package conv

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBias checks AddBias and BiasGrad against per-plane float64 sums.
func TestBias(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct{ c, ld int }{{1, 1}, {3, 17}, {16, 1024}} {
		y, b := randSlice(r, tc.c*tc.ld), randSlice(r, tc.c)
		want := append([]float32(nil), y...)
		AddBias(y, b, tc.ld)
		for i := range y {
			if w := want[i] + b[i/tc.ld]; y[i] != w {
				t.Fatalf("%+v: y[%d] = %v, want %v", tc, i, y[i], w)
			}
		}
		db := randSlice(r, tc.c)
		for ch := range tc.c {
			s := float64(db[ch])
			for _, v := range y[ch*tc.ld : (ch+1)*tc.ld] {
				s += float64(v)
			}
			want[ch] = float32(s)
		}
		BiasGrad(db, y, tc.ld)
		for ch := range tc.c {
			if d := math.Abs(float64(db[ch] - want[ch])); d > 1e-4*(1+math.Abs(float64(want[ch]))) {
				t.Fatalf("%+v: db[%d] = %v, want %v", tc, ch, db[ch], want[ch])
			}
		}
	}
}
