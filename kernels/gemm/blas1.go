package gemm

import "fmt"

// Saxpy computes y += alpha*x. It panics if len(x) != len(y).
func Saxpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("gemm: Saxpy: len(x)=%d != len(y)=%d", len(x), len(y)))
	}
	if alpha == 0 || len(x) == 0 {
		return
	}
	n := 0
	if useVecBLAS1 {
		n = saxpyAsm(alpha, x, y)
	}
	saxpyGo(alpha, x[n:], y[n:])
}

// Sdot returns the dot product of x and y, accumulated in float32 over
// several partial sums. It panics if len(x) != len(y).
func Sdot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("gemm: Sdot: len(x)=%d != len(y)=%d", len(x), len(y)))
	}
	var s float32
	n := 0
	if useVecBLAS1 {
		s, n = sdotAsm(x, y)
	}
	return s + sdotGo(x[n:], y[n:])
}

// useVecBLAS1 tells whether Saxpy and Sdot use the assembly loops: when the
// CPU has AVX2 and FMA and cpu.ISA (DUEL_ISA) is not generic. Set
// once at initialisation.
var useVecBLAS1 = hasVecBLAS1 && active.name != "generic"

func saxpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func sdotGo(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}
