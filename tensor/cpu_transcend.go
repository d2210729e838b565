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
// (1-e)/(1+e) would cancel, and Cephes' tanhf polynomial is used.
const tanhExpMin = 0.625

// Cephes tanhf: tanh a ≈ a + a·z·P(z), z = a², for |a| < 0.625.
const (
	tanhP0 = -5.70498872745e-3
	tanhP1 = 2.06390887954e-2
	tanhP2 = -5.37397155531e-2
	tanhP3 = 1.33314422036e-1
	tanhP4 = -3.33332819422e-1
)

// sigmoid1 is the logistic function in float32 arithmetic, in the form that
// neither overflows nor cancels: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below.
func sigmoid1(x float32) float32 {
	return sigmoidOf(x, vecmath.Expf(-abs32(x)))
}

// sigmoidOf finishes sigmoid1 from e = e^-|x|: 1/(1+e) when x's sign bit
// is clear, else e/(1+e) (the numerator chosen by a bit mask, not a branch:
// random signs would mispredict half the time). For x = -0, e = 1 and both
// forms give 0.5; for NaN, e is NaN.
func sigmoidOf(x, e float32) float32 {
	neg := uint32(int32(math.Float32bits(x)) >> 31)
	n := math.Float32frombits(neg&math.Float32bits(e) | ^neg&0x3f800000) // e or 1
	return n / (1 + e)
}

// tanh1 is the hyperbolic tangent in float32 arithmetic: for a = |x| >=
// tanhExpMin, (1-e)/(1+e) with e = e^(-2a); below, Cephes' polynomial; the
// sign of x put back last (so tanh(-0) = -0).
func tanh1(x float32) float32 {
	return tanhOf(x, vecmath.Expf(-2*abs32(x)))
}

// tanhOf finishes tanh1 from e = e^(-2|x|). Both forms are computed and one
// chosen by a mask rather than a branch, which mispredicts on random data.
func tanhOf(x, e float32) float32 {
	a := abs32(x)
	z := a * a
	small := math.Float32bits(((((tanhP0*z+tanhP1)*z+tanhP2)*z+tanhP3)*z+tanhP4)*z*a + a)
	large := math.Float32bits((1 - e) / (1 + e))
	var m uint32
	if a >= tanhExpMin {
		m = ^uint32(0)
	}
	sign := math.Float32bits(x) & (1 << 31)
	return math.Float32frombits((m&large | ^m&small) | sign)
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
