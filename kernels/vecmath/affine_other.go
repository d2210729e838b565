//go:build !amd64 || noasm

package vecmath

// Affine writes dst[i] = (x[i]-mu)*a + b.
func Affine(dst, x []float32, mu, a, b float32) { affineGo(dst, x, mu, a, b) }

// AffineReLU writes dst[i] = max((x[i]-mu)*a + b, 0).
func AffineReLU(dst, x []float32, mu, a, b float32) { affineReLUGo(dst, x, mu, a, b) }

// AffineAddReLU writes dst[i] = max((x[i]-mu)*a + b + r[i], 0).
func AffineAddReLU(dst, x, r []float32, mu, a, b float32) { affineAddReLUGo(dst, x, r, mu, a, b) }

// MaskPositive writes dx[i] = dy[i] where y[i] > 0, else 0.
func MaskPositive(dx, dy, y []float32) { maskPositiveGo(dx, dy, y) }

// Sum returns the sum of x in the 8-lane order of sum8Go.
func Sum(x []float32) float32 { return sum8Go(x) }
