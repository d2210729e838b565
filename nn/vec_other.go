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
