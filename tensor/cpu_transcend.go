package tensor

import (
	"math"

	"github.com/duel-ssl/duel/kernels/vecmath"
)

// The CPU backend's exponential-based functions go through the float32
// exponential of kernels/vecmath (within 2 ulp of eˣ; AVX2 over slices).
// Contiguous rows and single elements give the same bits.

// transcendChunk is how many elements the slice forms of Sigmoid and Tanh
// take at a time through a stack buffer (so that dst may alias src).
const transcendChunk = 256

// tanhExpMin is the |x| from which tanh is computed from e^(-2|x|); below,
// (1-e)/(1+e) would cancel, and math.Tanh is used.
const tanhExpMin = 0.625

// sigmoid1 is the logistic function in float32 arithmetic, in the form that
// neither overflows nor cancels: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below.
func sigmoid1(x float32) float32 {
	return sigmoidOf(x, vecmath.Expf(-abs32(x)))
}

// sigmoidOf finishes sigmoid1 from e = e^-|x|.
func sigmoidOf(x, e float32) float32 {
	if x >= 0 {
		return 1 / (1 + e)
	}
	return e / (1 + e)
}

// tanh1 is the hyperbolic tangent: sign(x)·(1-e)/(1+e) with e = e^(-2|x|)
// for |x| >= tanhExpMin, math.Tanh below (and for NaN).
func tanh1(x float32) float32 {
	return tanhOf(x, vecmath.Expf(-2*abs32(x)))
}

// tanhOf finishes tanh1 from e = e^(-2|x|).
func tanhOf(x, e float32) float32 {
	if !(abs32(x) >= tanhExpMin) {
		return float32(math.Tanh(float64(x)))
	}
	return float32(math.Copysign(float64((1-e)/(1+e)), float64(x)))
}

// abs32 is |x|.
func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// sigmoidVec sets d[i] = sigmoid1(s[i]); d may be s.
func sigmoidVec(d, s []float32) {
	var buf [transcendChunk]float32
	for lo := 0; lo < len(d); lo += transcendChunk {
		dc, sc := d[lo:min(lo+transcendChunk, len(d))], s[lo:]
		e := buf[:len(dc)]
		for i := range e {
			e[i] = -abs32(sc[i])
		}
		vecmath.Exp(e, e)
		for i := range dc {
			dc[i] = sigmoidOf(sc[i], e[i])
		}
	}
}

// tanhVec sets d[i] = tanh1(s[i]); d may be s.
func tanhVec(d, s []float32) {
	var buf [transcendChunk]float32
	for lo := 0; lo < len(d); lo += transcendChunk {
		dc, sc := d[lo:min(lo+transcendChunk, len(d))], s[lo:]
		e := buf[:len(dc)]
		for i := range e {
			e[i] = -2 * abs32(sc[i])
		}
		vecmath.Exp(e, e)
		for i := range dc {
			dc[i] = tanhOf(sc[i], e[i])
		}
	}
}
