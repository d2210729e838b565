// Package floattest holds the helpers of the tests that hold a SIMD loop to
// its Go reference bit for bit: operands with special values, and the first
// element where two results differ.
package floattest

import (
	"math"
	"math/rand/v2"
)

// Specials returns n values drawn from normals (standard deviation 3),
// zeros, negative zeros and infinities of both signs.
func Specials(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch r.IntN(12) {
		case 0:
			v[i] = 0
		case 1:
			v[i] = float32(math.Copysign(0, -1))
		case 2:
			v[i] = float32(math.Inf(1 - 2*r.IntN(2)))
		default:
			v[i] = float32(r.NormFloat64() * 3)
		}
	}
	return v
}

// FirstDiff returns the first index where a and b differ in their bits
// (two NaNs count as equal, whatever their payloads), or -1. b must be at
// least as long as a.
func FirstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}
