// Package gemm is the CPU single-precision matrix multiply (SGEMM) that every
// hot path of the engine goes through.
//
// # Algorithm
//
// Sgemm follows the GotoBLAS/BLIS scheme. For each nc-wide block of columns
// of op(B) and each kc-deep slice of the shared dimension, the threads pack
// the kc x nc block of op(B) together into a contiguous buffer of nr-wide
// micro-panels (sized for the L3 cache), then each thread packs mc x kc
// blocks of alpha*op(A) into mr-high micro-panels (sized for its L2 cache)
// and runs the micro-kernel over every mr x nr tile of C, with the kc x nr
// micro-panel of B staying in L1. Edge tiles are computed into a scratch tile
// and merged, so any m, n, k, lda, ldb and ldc work. Pack buffers come from a
// sync.Pool: a call allocates nothing in steady state.
//
// # Kernels
//
// Three micro-kernels exist, chosen at start-up from the CPU features
// (golang.org/x/sys/cpu):
//
//	avx512   14x32 register tile, 28 zmm accumulators, VFMADD231PS     mc=336 kc=384 nc=4096
//	avx2      6x16 register tile, 12 ymm accumulators, VFMADD231PS     mc=192 kc=256 nc=4096
//	generic   4x4 tile in plain Go (any CPU, and builds tagged noasm)  mc=128 kc=256 nc=1024
//
// The blocking parameters were chosen by measurement on an AMD EPYC (Zen 5
// class, 48-64 KiB L1d, 1-2 MiB L2 per core, 32 MiB L3); see bench/RESULTS.md.
//
// The environment variable DUEL_ISA=avx512|avx2|generic, read once at
// start-up, forces a variant. Asking for a variant the CPU (or a noasm build)
// lacks falls back to the best available one below it, never crashes; an
// unknown value is ignored. ISA reports the variant in use.
//
// # Threads
//
// Problems of at least about 2*128^3 flops run on runtime.GOMAXPROCS(0)
// goroutines (see Threads); smaller ones run on the caller's goroutine. The
// threads split the rows of C (or, for matrices with few rows, its columns)
// and share the packed blocks of op(B).
package gemm

import (
	"fmt"
	"runtime"
)

// Sgemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices, where
// op(X) is X or its transpose. op(A) is m x k, op(B) is k x n and C is m x n;
// lda, ldb and ldc are the row strides of A, B and C as stored. When beta is
// zero C is overwritten and its previous contents (even NaNs) are ignored,
// as in BLAS. Sgemm panics, like gonum's BLAS, when a dimension is negative,
// a stride is too small or a slice is too short.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(active, problem{transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc})
}

// Threads returns the number of goroutines Sgemm uses for large problems:
// runtime.GOMAXPROCS(0) at the time of the call.
func Threads() int { return runtime.GOMAXPROCS(0) }

// problem holds the arguments of one Sgemm call.
type problem struct {
	transA, transB bool
	m, n, k        int
	alpha          float32
	a              []float32
	lda            int
	b              []float32
	ldb            int
	beta           float32
	c              []float32
	ldc            int
}

// check panics with a clear message when the arguments are inconsistent.
func (p *problem) check() {
	if p.m < 0 || p.n < 0 || p.k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", p.m, p.n, p.k))
	}
	checkMatrix("A", p.a, p.lda, p.transA, p.m, p.k)
	checkMatrix("B", p.b, p.ldb, p.transB, p.k, p.n)
	checkMatrix("C", p.c, p.ldc, false, p.m, p.n)
}

// checkMatrix checks that x, stored row-major with stride ld, holds an
// r x c matrix op(X) (stored as c x r when trans).
func checkMatrix(name string, x []float32, ld int, trans bool, r, c int) {
	if trans {
		r, c = c, r
	}
	if ld < max(1, c) {
		panic(fmt.Sprintf("gemm: ld%s=%d, want >= %d", name, ld, max(1, c)))
	}
	if r > 0 && c > 0 && len(x) < (r-1)*ld+c {
		panic(fmt.Sprintf("gemm: len(%s)=%d, want >= %d for a %dx%d matrix with stride %d", name, len(x), (r-1)*ld+c, r, c, ld))
	}
}

// scaleC sets C = beta*C (C = 0 when beta is zero).
func (p *problem) scaleC() {
	for i := 0; i < p.m; i++ {
		row := p.c[i*p.ldc : i*p.ldc+p.n]
		if p.beta == 0 {
			clear(row)
			continue
		}
		if p.beta == 1 {
			continue
		}
		for j := range row {
			row[j] *= p.beta
		}
	}
}
