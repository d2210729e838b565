package gemm

import (
	"fmt"
	"math"
	"runtime"
)

// The paired form of SgemmBF16, for callers that build the bfloat16
// operands themselves (a convolution pairs the input's channels or images
// once, then lays out its patches as words): a word holds a pair of
// bfloat16 values, the lower half the even k (PairPlanes writes them).

// PairPlanes writes dst[j] = the bfloat16 pair of r0[j] (lower half) and
// r1[j] for j < len(dst), rounded as RoundBF16 rounds; r1 nil pairs r0
// with zeros. r0 (and r1) must hold at least len(dst) values.
func PairPlanes(dst, r0, r1 []float32) {
	r0 = r0[:len(dst)]
	if r1 == nil {
		for j, v := range r0 {
			dst[j] = math.Float32frombits(uint32(roundBF16(v)))
		}
		return
	}
	r1 = r1[:len(dst)]
	done := pairRowsBF16(dst, r0, r1)
	for j := done; j < len(dst); j++ {
		dst[j] = math.Float32frombits(uint32(roundBF16(r0[j])) | uint32(roundBF16(r1[j]))<<16)
	}
}

// PairRuns writes count runs of n words: run i at dst[i*dstStep:], its
// word t the bfloat16 pair of r0[i*step+s] (lower half) and r1[i*step+s],
// s = t, or n-1-t when reverse (a convolution's weights paired by
// channel, flipped for its transposed form). It panics if a run falls
// outside its slice. Runs of at most 16 words go through AVX512_BF16 where
// the CPU has it.
func PairRuns(dst []float32, dstStep int, r0, r1 []float32, step, count, n int, reverse bool) {
	if count <= 0 || n <= 0 {
		return
	}
	last := (count-1)*step + n
	if len(r0) < last || len(r1) < last || len(dst) < (count-1)*dstStep+n || step < 0 || dstStep < 0 {
		panic(fmt.Sprintf("gemm.PairRuns: %d runs of %d at steps %d and %d overrun dst (%d), r0 (%d) or r1 (%d)",
			count, n, step, dstStep, len(dst), len(r0), len(r1)))
	}
	if pairRunsAsm(dst, dstStep, r0, r1, step, count, n, reverse) {
		return
	}
	for i := range count {
		a, b, d := r0[i*step:][:n], r1[i*step:][:n], dst[i*dstStep:][:n]
		for t := range d {
			s := t
			if reverse {
				s = n - 1 - t
			}
			d[t] = math.Float32frombits(uint32(roundBF16(a[s])) | uint32(roundBF16(b[s]))<<16)
		}
	}
}

// BF16Bits writes dst[i] = the bits of RoundBF16(src[i]) for i <
// len(dst) (src holds at least as many), 32 at a time on AVX512_BF16.
func BF16Bits(dst []uint16, src []float32) {
	src = src[:len(dst)]
	done := cvtBF16Bits(dst, src)
	for i := done; i < len(dst); i++ {
		dst[i] = roundBF16(src[i])
	}
}

// SgemmPairedBF16 computes C = A2*B2 + beta*C where op(A2) is m x k2 and
// op(B2) k2 x n matrices of words, each the bfloat16 pair of two
// consecutive k (PairPlanes): the product of SgemmBF16 (alpha 1) on
// operands already rounded and paired. Strides and transpositions are
// Sgemm's, counted in words. Without AVX512_BF16 (NativeBF16 false) the
// pairs are unpacked into float32 and multiplied by Sgemm.
func SgemmPairedBF16(transA, transB bool, m, n, k2 int, a2 []float32, lda2 int, b2 []float32, ldb2 int, beta float32, c []float32, ldc int) {
	sgemmPaired(problem{transA, transB, m, n, k2, 1, a2, lda2, b2, ldb2, beta, c, ldc, nil}, runtime.GOMAXPROCS(0))
}

// SgemmPairedBF16Serial is SgemmPairedBF16 on the caller's goroutine alone
// (bit-identical).
func SgemmPairedBF16Serial(transA, transB bool, m, n, k2 int, a2 []float32, lda2 int, b2 []float32, ldb2 int, beta float32, c []float32, ldc int) {
	sgemmPaired(problem{transA, transB, m, n, k2, 1, a2, lda2, b2, ldb2, beta, c, ldc, nil}, 1)
}

// sgemmPaired runs the paired product p (k counted in pairs) on at most
// maxThreads threads.
func sgemmPaired(p problem, maxThreads int) {
	if p.trivial() {
		return
	}
	// A pair step is two multiply-adds: 4 flops a word of k.
	threads := threadsUpTo(4*float64(p.m)*float64(p.n)*float64(p.k), maxThreads)
	if activeBF16 != nil {
		pairedProduct(activeBF16, p, threads)
		return
	}
	// Unpack each operand's words into two float32 each, along k.
	ar, ac, br, bc := p.stored()
	ua := getWords(2 * ar * ac)
	ub := getWords(2 * br * bc)
	lda, ldb := unpackPairs(*ua, p.a, p.lda, ar, ac, p.transA), unpackPairs(*ub, p.b, p.ldb, br, bc, !p.transB)
	sgemm(active, problem{p.transA, p.transB, p.m, p.n, 2 * p.k, 1, *ua, lda, *ub, ldb, p.beta, p.c, p.ldc, nil}, threads)
	putWords(ua)
	putWords(ub)
}

// pairedProduct multiplies the paired problem p on the AMX tiles when
// DUEL_ISA=amx gave them (amxKernel), else with the bfloat16 kernel kn.
func pairedProduct(kn *kernel, p problem, threads int) {
	if amxKernel != nil {
		amxProduct(amxKernel, p, threads)
		return
	}
	sgemm(kn, p, threads)
}

// unpackPairs writes the r x c matrix of words x (row stride ld) as
// float32 into dst and returns its row stride: when kDown (k runs down
// the rows: each word row becomes two rows) a 2r x c matrix, else r x 2c
// (each word two adjacent values).
func unpackPairs(dst, x []float32, ld, r, c int, kDown bool) int {
	lo := func(w float32) float32 { return math.Float32frombits(math.Float32bits(w) << 16) }
	hi := func(w float32) float32 { return math.Float32frombits(math.Float32bits(w) &^ 0xffff) }
	for i := range r {
		row := x[i*ld : i*ld+c]
		if kDown {
			even, odd := dst[2*i*c:2*i*c+c], dst[(2*i+1)*c:(2*i+1)*c+c]
			for j, w := range row {
				even[j], odd[j] = lo(w), hi(w)
			}
			continue
		}
		out := dst[i*2*c : i*2*c+2*c]
		for j, w := range row {
			out[2*j], out[2*j+1] = lo(w), hi(w)
		}
	}
	if kDown {
		return c
	}
	return 2 * c
}
