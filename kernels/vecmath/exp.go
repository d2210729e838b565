package vecmath

import "math"

// Constants of expf (Cephes): eˣ = 2ⁿ·eʳ with n = round(x·log₂e),
// r = x - n·ln 2 (ln 2 = c1 + c2 split for exactness) and eʳ by a degree-6
// polynomial.
const (
	expLog2e = 1.44269504088896341
	expC1    = 0.693359375
	expC2    = -2.12194440e-4
	expMagic = 12582912 // 1.5·2²³: adding it rounds a float32 to an integer
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
	expLo    = -87 // below, 2ⁿ is subnormal: defer to math.Exp
	expHi    = 88  // above, eˣ overflows float32
)

// Expf returns eˣ in float32 arithmetic, within 2 ulp of the exact value
// on [-87, 88]; outside that range, and for NaN, it defers to math.Exp
// (overflow to +Inf, underflow through subnormals to 0). It is the scalar
// form of ExpShift and gives the same bits.
func Expf(x float32) float32 {
	if !(x >= expLo && x <= expHi) {
		return float32(math.Exp(float64(x)))
	}
	return expPoly(x)
}

// expPoly is Expf on [expLo, expHi]: n = round(x·log2 e), the reduced
// argument r = x - n·ln 2 in two parts, a degree-7 polynomial in r, scaled
// by 2^n. Every product that is added is converted explicitly, so that no
// compiler fuses it into a fused multiply-add (GOAMD64=v3 and arm64 builds
// otherwise do): the assembly kernel rounds each product.
func expPoly(x float32) float32 {
	n := float32(x*expLog2e) + expMagic - expMagic
	r := x - float32(n*expC1) - float32(n*expC2)
	p := float32(expP0*r) + expP1
	p = float32(p*r) + expP2
	p = float32(p*r) + expP3
	p = float32(p*r) + expP4
	p = float32(p*r) + expP5
	p = float32(float32(p*r)*r) + r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// ExpShift sets dst[i] = Expf(src[i] - shift) for i < len(src) and returns
// the sum of the results in float64, with the AVX2 kernel when the CPU has
// it (and DUEL_ISA does not ask for the generic variant). The values are
// bit for bit those of Expf whatever the kernel; the sum may differ in its
// last bits, as it is added in another order. dst must be at least as long
// as src; dst and src may be the same slice.
func ExpShift(dst, src []float32, shift float32) float64 {
	dst = dst[:len(src)]
	var s float64
	i := 0
	if useAVX2 {
		var acc [4]float64
		blocks := len(src) &^ 7
		for i < blocks {
			i += expShiftAVX2(dst[i:], src[i:], shift, &acc)
			if i < blocks { // a block with out-of-range values
				s += expShiftGo(dst[i:i+8], src[i:i+8], shift)
				i += 8
			}
		}
		s += (acc[0] + acc[1]) + (acc[2] + acc[3])
	}
	return s + expShiftGo(dst[i:], src[i:], shift)
}

// Exp sets dst[i] = Expf(src[i]) for i < len(src), as ExpShift with a zero
// shift.
func Exp(dst, src []float32) { ExpShift(dst, src, 0) }

// expShiftGo is ExpShift in plain Go: Expf with the loop inlined.
func expShiftGo(dst, src []float32, shift float32) float64 {
	dst = dst[:len(src)]
	var s float64
	for i, v := range src {
		x := v - shift
		var e float32
		if x >= expLo && x <= expHi {
			e = expPoly(x)
		} else {
			e = float32(math.Exp(float64(x)))
		}
		dst[i] = e
		s += float64(e)
	}
	return s
}
