//go:build amd64 && !noasm

package nn

import "github.com/duel-ssl/duel/internal/cpu"

// useAVX2 selects the assembly loops, set once at initialisation:
// internal/cpu allows AVX2 (the CPU has it and DUEL_ISA is not generic).
var useAVX2 = cpu.AllowAVX2()

// vecISA names the elementwise kernels in use.
var vecISA = map[bool]string{true: "avx2", false: "generic"}[useAVX2]

// The assembly loops (vec_amd64.s) are equivalent to the *Go functions of
// vec.go; they process 8 floats per step and the tail one by one.

//go:noescape
func affineAVX2(dst, x []float32, mu, a, b float32)

//go:noescape
func affineReLUAVX2(dst, x []float32, mu, a, b float32)

//go:noescape
func affineAddReLUAVX2(dst, x, r []float32, mu, a, b float32)

//go:noescape
func maskPositiveAVX2(dx, dy, y []float32)

//go:noescape
func bnDxAVX2(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32)

func affine(dst, x []float32, mu, a, b float32) {
	if useAVX2 {
		affineAVX2(dst, x[:len(dst)], mu, a, b)
		return
	}
	affineGo(dst, x, mu, a, b)
}

func affineReLU(dst, x []float32, mu, a, b float32) {
	if useAVX2 {
		affineReLUAVX2(dst, x[:len(dst)], mu, a, b)
		return
	}
	affineReLUGo(dst, x, mu, a, b)
}

func affineAddReLU(dst, x, r []float32, mu, a, b float32) {
	if useAVX2 {
		affineAddReLUAVX2(dst, x[:len(dst)], r[:len(dst)], mu, a, b)
		return
	}
	affineAddReLUGo(dst, x, r, mu, a, b)
}

func maskPositive(dx, dy, y []float32) {
	if useAVX2 {
		maskPositiveAVX2(dx, dy[:len(dx)], y[:len(dx)])
		return
	}
	maskPositiveGo(dx, dy, y)
}

func bnDxTrain(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32) {
	if useAVX2 {
		bnDxAVX2(dx, x[:len(dx)], dy[:len(dx)], scale, is, mu, mdy, mdyx)
		return
	}
	bnDxGo(dx, x, dy, scale, is, mu, mdy, mdyx)
}

//go:noescape
func sum8AVX2(x []float32) (s float32)

//go:noescape
func sqDev8AVX2(x []float32, mu float32) (s float32)

//go:noescape
func bnSumsAVX2(dy, x []float32, mu float32) (s, sx float32)

//go:noescape
func bnSumsMaskedAVX2(dy, x, y []float32, mu float32) (s, sx float32)

func sum8(x []float32) float32 {
	if useAVX2 {
		return sum8AVX2(x)
	}
	return sum8Go(x)
}

func sqDev8(x []float32, mu float32) float32 {
	if useAVX2 {
		return sqDev8AVX2(x, mu)
	}
	return sqDev8Go(x, mu)
}

func bnSums(dy, x []float32, mu float32) (float32, float32) {
	if useAVX2 {
		return bnSumsAVX2(dy, x[:len(dy)], mu)
	}
	return bnSumsGo(dy, x, mu)
}

func bnSumsMasked(dy, x, y []float32, mu float32) (float32, float32) {
	if useAVX2 {
		return bnSumsMaskedAVX2(dy, x[:len(dy)], y[:len(dy)], mu)
	}
	return bnSumsMaskedGo(dy, x, y, mu)
}
