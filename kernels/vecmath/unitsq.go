package vecmath

import "math"

// The check of a row meant to be a unit vector (DUEL's memory rows on the
// GPU: duel/memory/cudaduel): its squared norm in float64 and whether
// every value lies in [-1, 1]. The plain-Go reference (unitSquaresGo) is
// the definition; the AVX2 version (unitsq_amd64.s) computes the same bits.
//
// Order of the sum: 16 lanes, lane j adding the squares of the elements
// i ≡ j mod 16 of the whole blocks of 16; the lanes combined as (j, j+8),
// then (j, j+4), then (0, 2) and (1, 3), then (0, 1); the tail's squares
// added in order. Each square of a float32 is exact in float64, so a
// fused multiply-add and a product then a sum give the same bits.

// oneBits is the bits of float32 1.0: |v| > 1 or NaN exactly when v's
// bits without the sign are above it.
const oneBits = 0x3f800000

// unitSquaresGo returns the sum of the squares of x in float64, in the
// order above, and whether every element is in [-1, 1] (not NaN).
func unitSquaresGo(x []float32) (ss float64, ok bool) {
	var acc [16]float64
	n := len(x) &^ 15
	var bad int32 // negative once a value is beyond [-1, 1] or NaN: no branch a value
	for i := 0; i < n; i += 16 {
		b := x[i : i+16 : i+16]
		for j, v := range b {
			acc[j] += float64(v) * float64(v)
			bad |= beyondOne(v)
		}
	}
	ss = hsum16(&acc)
	for _, v := range x[n:] {
		ss += float64(v) * float64(v)
		bad |= beyondOne(v)
	}
	return ss, bad >= 0
}

// beyondOne is the bits of 1.0 minus those of |v|: negative exactly when
// |v| > 1 or v is NaN.
func beyondOne(v float32) int32 { return oneBits - int32(math.Float32bits(v)&0x7fffffff) }

// hsum16 combines 16 lane sums in the order above.
func hsum16(acc *[16]float64) float64 {
	var s [8]float64
	for j := range 8 {
		s[j] = acc[j] + acc[j+8]
	}
	t0, t1, t2, t3 := s[0]+s[4], s[1]+s[5], s[2]+s[6], s[3]+s[7]
	return (t0 + t2) + (t1 + t3)
}
