package memory

import "math"

// Kernels of the rows' way in: normalisation (normalizeRows) and rounding
// to the similarity grid (gridSet.fromUnit), with the arithmetic of
// normalizeRow and gridOf, bit for bit.

// normRows is the number of rows a normalisation kernel takes at once.
const normRows = 8

// normFunc is a normalisation kernel: normalizeRow on normRows rows of z
// values (dst and src hold normRows*z; dst may be src), each row's sum of
// squares in its order and the same roundings. It reports false, leaving
// dst as it is, when one of the rows cannot be normalised.
type normFunc func(dst, src []float32, z int) bool

// normalize8 runs normKernel, or normalize8Go without one.
func normalize8(dst, src []float32, z int) bool {
	if normKernel != nil {
		return normKernel(dst, src, z)
	}
	return normalize8Go(dst, src, z)
}

// normalize8Go is the Go normalisation kernel: the sums of squares of four
// rows at a time are independent chains of additions, which the CPU
// overlaps, where one row's chain waits for each addition.
func normalize8Go(dst, src []float32, z int) bool {
	var sums [normRows]float64
	for r := 0; r < normRows; r += 4 {
		a, b, c, d := src[r*z:(r+1)*z], src[(r+1)*z:(r+2)*z], src[(r+2)*z:(r+3)*z], src[(r+3)*z:(r+4)*z]
		b, c, d = b[:len(a)], c[:len(a)], d[:len(a)]
		var sa, sb, sc, sd float64
		for i, v := range a {
			sa += float64(v) * float64(v)
			sb += float64(b[i]) * float64(b[i])
			sc += float64(c[i]) * float64(c[i])
			sd += float64(d[i]) * float64(d[i])
		}
		sums[r], sums[r+1], sums[r+2], sums[r+3] = sa, sb, sc, sd
	}
	if !sumsOK(sums[:]) {
		return false
	}
	for r, ss := range sums {
		scaleRow(dst[r*z:(r+1)*z], src[r*z:(r+1)*z], 1/math.Sqrt(ss))
	}
	return true
}

// sumsOK reports whether every sum of squares is finite and not zero.
func sumsOK(sums []float64) bool {
	for _, ss := range sums {
		if math.IsNaN(ss) || math.IsInf(ss, 0) || ss == 0 {
			return false
		}
	}
	return true
}

// scaleRow writes float32(float64(v)*inv) for every v of src into dst.
func scaleRow(dst, src []float32, inv float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float32(float64(v) * inv)
	}
}

// gridFunc is a grid kernel: dst[c] = int16(gridOf(src[c])) for every c,
// on slices of equal length, a multiple of 16.
type gridFunc func(dst []int16, src []float32)

// gridRow writes the grid version of the unit row src into dst (same
// length): gridKernel on the first multiple of 16 components, Go on the
// rest.
func gridRow(dst []int16, src []float32) {
	gridRowWith(gridKernel, dst, src)
}

// gridRowWith is gridRow with kern (the Go loop on everything when kern is
// nil).
func gridRowWith(kern gridFunc, dst []int16, src []float32) {
	dst = dst[:len(src)]
	m := 0
	if kern != nil {
		if m = len(src) &^ 15; m > 0 {
			kern(dst[:m], src[:m])
		}
	}
	for c, x := range src[m:] {
		dst[m+c] = int16(gridOf(x))
	}
}
