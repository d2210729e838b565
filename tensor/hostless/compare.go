package hostless

import (
	"math"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// HostData copies x, on any device, to a contiguous host slice, failing tb
// when the copy fails.
func HostData(tb testing.TB, x *tensor.Tensor) []float32 {
	tb.Helper()
	h, err := x.To(tensor.CPU)
	if err != nil {
		tb.Fatal(err)
	}
	return h.Contiguous().Data()
}

// SameBits reports whether a and b hold the same float32 bit patterns.
func SameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// RelDiff returns the largest |a-b|/(1+|b|): 0 for a NaN against a NaN,
// +Inf for a NaN against a number or for slices of different lengths.
func RelDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var m float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		switch {
		case math.IsNaN(x) && math.IsNaN(y), x == y:
		case math.IsNaN(x) || math.IsNaN(y):
			m = math.Inf(1)
		default:
			m = max(m, math.Abs(x-y)/(1+math.Abs(y)))
		}
	}
	return m
}
