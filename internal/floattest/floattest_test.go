package floattest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFirstDiff checks equal slices, NaNs with other payloads, signed
// zeros and the first of several differences.
func TestFirstDiff(t *testing.T) {
	nan2 := math.Float32frombits(0x7fc00001)
	negZero := float32(math.Copysign(0, -1))
	for _, c := range []struct {
		a, b []float32
		want int
	}{
		{nil, nil, -1},
		{[]float32{1, 2}, []float32{1, 2}, -1},
		{[]float32{float32(math.NaN())}, []float32{nan2}, -1},
		{[]float32{0}, []float32{negZero}, 0},
		{[]float32{1, 2, 3}, []float32{1, 5, 6}, 1},
	} {
		if got := FirstDiff(c.a, c.b); got != c.want {
			t.Errorf("FirstDiff(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestSpecials checks that every kind of value is drawn.
func TestSpecials(t *testing.T) {
	v := Specials(rand.New(rand.NewPCG(1, 1)), 1000)
	var zero, neg, inf, normal bool
	for _, x := range v {
		switch {
		case x == 0 && math.Signbit(float64(x)):
			neg = true
		case x == 0:
			zero = true
		case math.IsInf(float64(x), 0):
			inf = true
		default:
			normal = true
		}
	}
	if !zero || !neg || !inf || !normal {
		t.Errorf("zeros %v, negative zeros %v, infinities %v, normals %v: want all", zero, neg, inf, normal)
	}
}
