//go:build !amd64 || noasm

package nn

func affine(dst, x []float32, mu, a, b float32)           { affineGo(dst, x, mu, a, b) }
func affineReLU(dst, x []float32, mu, a, b float32)       { affineReLUGo(dst, x, mu, a, b) }
func affineAddReLU(dst, x, r []float32, mu, a, b float32) { affineAddReLUGo(dst, x, r, mu, a, b) }
func maskPositive(dx, dy, y []float32)                    { maskPositiveGo(dx, dy, y) }
func bnDxTrain(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32) {
	bnDxGo(dx, x, dy, scale, is, mu, mdy, mdyx)
}

// vecISA names the elementwise kernels in use.
const vecISA = "generic"

func sum8(x []float32) float32                              { return sum8Go(x) }
func sqDev8(x []float32, mu float32) float32                { return sqDev8Go(x, mu) }
func bnSums(dy, x []float32, mu float32) (float32, float32) { return bnSumsGo(dy, x, mu) }
func bnSumsMasked(dy, x, y []float32, mu float32) (float32, float32) {
	return bnSumsMaskedGo(dy, x, y, mu)
}
