//go:build !amd64 || noasm

package vecmath

// UnitSquares returns the sum of the squares of x in float64 (in the
// order of unitsq.go) and whether every element of x is in [-1, 1] (not
// NaN).
func UnitSquares(x []float32) (ss float64, ok bool) { return unitSquaresGo(x) }
