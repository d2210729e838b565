package backendtest

import (
	"math"
	"math/rand/v2"
)

// TopKValues returns n values for the top-k tests: levels quantised values
// (many ties), with about one in oneIn a special value instead: -0, +Inf
// or -Inf, or NaN. The CPU's selection (tensor's tests) and the devices'
// (cuda's) draw their data from it.
func TopKValues(r *rand.Rand, n, levels, oneIn int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.IntN(levels)-levels/2) / 4
		switch r.IntN(oneIn) {
		case 0:
			x[i] = float32(math.Copysign(0, -1))
		case 1:
			x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
		case 2:
			x[i] = float32(math.NaN())
		}
	}
	return x
}
