//go:build amd64 && !noasm

package gemm

import "github.com/duel-ssl/duel/internal/cpu"

// hasVecBLAS1 tells whether the AVX2+FMA Saxpy and Sdot loops can run.
var hasVecBLAS1 = cpu.Detect().AVX2 && cpu.Detect().FMA

// saxpyAVX2 does y[i] += alpha*x[i] for i < n, n a multiple of 32, with
// AVX2+FMA. The equivalent Go loop:
//
//	for i := 0; i < n; i++ {
//		y[i] += alpha * x[i]
//	}
//
//go:noescape
func saxpyAVX2(alpha float32, x, y *float32, n int)

// sdotAVX2 returns sum x[i]*y[i] for i < n, n a multiple of 32, with
// AVX2+FMA and four vector partial sums. The equivalent Go loop:
//
//	for i := 0; i < n; i++ {
//		s += x[i] * y[i]
//	}
//
//go:noescape
func sdotAVX2(x, y *float32, n int) float32

// saxpyAsm runs the assembly Saxpy on the longest multiple of 32 elements
// and returns how many it did.
func saxpyAsm(alpha float32, x, y []float32) int {
	n := len(x) &^ 31
	if n > 0 {
		_ = y[n-1]
		saxpyAVX2(alpha, &x[0], &y[0], n)
	}
	return n
}

// sdotAsm runs the assembly Sdot on the longest multiple of 32 elements and
// returns the partial sum and how many elements it did.
func sdotAsm(x, y []float32) (float32, int) {
	n := len(x) &^ 31
	if n == 0 {
		return 0, 0
	}
	_ = y[n-1]
	return sdotAVX2(&x[0], &y[0], n), n
}
