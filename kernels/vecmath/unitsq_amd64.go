//go:build amd64 && !noasm

package vecmath

import "math"

// unitSquaresAVX2 is unitSquaresGo on the whole blocks of 16 elements of x
// (len(x) a multiple of 16), bit for bit: their squares' combined lane
// sums, and whether every element is in [-1, 1] (see unitsq_amd64.s).
//
//go:noescape
func unitSquaresAVX2(x []float32) (ss float64, ok bool)

// UnitSquares returns the sum of the squares of x in float64 (in the
// order of unitsq.go) and whether every element of x is in [-1, 1] (not
// NaN).
func UnitSquares(x []float32) (ss float64, ok bool) {
	if !useAVX2 {
		return unitSquaresGo(x)
	}
	n := len(x) &^ 15
	ss, ok = unitSquaresAVX2(x[:n])
	for _, v := range x[n:] {
		ss += float64(v) * float64(v)
		ok = ok && math.Float32bits(v)&0x7fffffff <= oneBits
	}
	return ss, ok
}
