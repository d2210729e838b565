//go:build amd64 && !noasm

package vecmath

// The assembly loops (affine_amd64.s) are equivalent to the *Go functions
// of affine.go; they process 8 floats per step and the tail one by one.

//go:noescape
func affineAVX2(dst, x []float32, mu, a, b float32)

//go:noescape
func affineReLUAVX2(dst, x []float32, mu, a, b float32)

//go:noescape
func affineAddReLUAVX2(dst, x, r []float32, mu, a, b float32)

//go:noescape
func maskPositiveAVX2(dx, dy, y []float32)

//go:noescape
func sum8AVX2(x []float32) (s float32)

// Affine writes dst[i] = (x[i]-mu)*a + b.
func Affine(dst, x []float32, mu, a, b float32) {
	if useAVX2 {
		affineAVX2(dst, x[:len(dst)], mu, a, b)
		return
	}
	affineGo(dst, x, mu, a, b)
}

// AffineReLU writes dst[i] = max((x[i]-mu)*a + b, 0).
func AffineReLU(dst, x []float32, mu, a, b float32) {
	if useAVX2 {
		affineReLUAVX2(dst, x[:len(dst)], mu, a, b)
		return
	}
	affineReLUGo(dst, x, mu, a, b)
}

// AffineAddReLU writes dst[i] = max((x[i]-mu)*a + b + r[i], 0).
func AffineAddReLU(dst, x, r []float32, mu, a, b float32) {
	if useAVX2 {
		affineAddReLUAVX2(dst, x[:len(dst)], r[:len(dst)], mu, a, b)
		return
	}
	affineAddReLUGo(dst, x, r, mu, a, b)
}

// MaskPositive writes dx[i] = dy[i] where y[i] > 0, else 0.
func MaskPositive(dx, dy, y []float32) {
	if useAVX2 {
		maskPositiveAVX2(dx, dy[:len(dx)], y[:len(dx)])
		return
	}
	maskPositiveGo(dx, dy, y)
}

// Sum returns the sum of x in the 8-lane order of sum8Go.
func Sum(x []float32) float32 {
	if useAVX2 {
		return sum8AVX2(x)
	}
	return sum8Go(x)
}
