package gemm

import (
	"math"
	"math/bits"
	"runtime"
	"sync"

	"github.com/duel-ssl/duel/internal/par"
)

// SgemmBF16 computes C = alpha*bf16(op(A))*bf16(op(B)) + beta*C, the
// product of Sgemm with every factor first rounded to bfloat16 (8 bits of
// mantissa: RoundBF16) and the sums kept in float32, as PyTorch's CPU
// autocast and the GPU's --precision bf16 compute a product. Arguments,
// shapes and panics are Sgemm's.
//
// Where the CPU has AVX512_BF16 (AMD Zen 4 and later, Intel Cooper Lake and
// Sapphire Rapids) and DUEL_ISA allows AVX-512, op(A) and op(B) are first
// rounded into pairs of bfloat16 along k, one pair per 32-bit word, and
// Sgemm's blocked driver runs on the words with micro-kernels that issue
// VDPBF16PS (two products a lane) instead of VFMADD231PS: twice the FMA's
// multiply-adds an instruction. Elsewhere (and with DUEL_ISA=avx2 or
// generic, or a noasm build) the rounded factors go through Sgemm. The two
// differ only in how the float32 sums are rounded: the hardware adds a
// pair's products in its own order and flushes denormal sums to zero.
func SgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmBF16(problem{transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil}, runtime.GOMAXPROCS(0))
}

// SgemmBF16Serial is SgemmBF16 on the caller's goroutine alone, as
// SgemmSerial is Sgemm's; the result is bit-identical to SgemmBF16's.
func SgemmBF16Serial(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmBF16(problem{transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil}, 1)
}

// NativeBF16 reports whether SgemmBF16 runs on this CPU's bfloat16
// instructions (AVX512_BF16) rather than on Sgemm with rounded factors.
func NativeBF16() bool { return activeBF16 != nil }

// AMX reports whether SgemmBF16 and SgemmPairedBF16 run on AMX tiles
// (DUEL_ISA=amx on a CPU and an operating system that have them).
func AMX() bool { return amxKernel != nil && activeBF16 != nil }

// ISABF16 names what SgemmBF16 runs on: "amx-bf16" (DUEL_ISA=amx),
// "avx512bf16", or "emulated on " and the ISA of Sgemm (ISA) that
// multiplies the rounded factors.
func ISABF16() string {
	if AMX() {
		return "amx-bf16"
	}
	if activeBF16 != nil {
		return "avx512bf16"
	}
	return "emulated on " + ISA()
}

// RoundBF16 returns x rounded to bfloat16 (its upper 16 bits kept), as
// AVX512_BF16's VCVTNE2PS2BF16 rounds it: to nearest, ties to even; a
// denormal becomes zero of the same sign; a NaN stays a NaN (made quiet).
func RoundBF16(x float32) float32 { return math.Float32frombits(uint32(roundBF16(x)) << 16) }

// roundBF16 is RoundBF16's upper 16 bits.
func roundBF16(x float32) uint16 {
	u := math.Float32bits(x)
	switch {
	case u&0x7f800000 == 0: // zero or denormal
		return uint16(u>>16) & 0x8000
	case u&0x7fffffff > 0x7f800000: // NaN
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// activeBF16 is the kernel of the native path (nil without one): the
// AVX512_BF16 tiles with the blocking derived for this CPU, the words of
// a pair step counted as one float of Sgemm's model.
var activeBF16 = chooseBF16(detectBF16(), active)

// chooseBF16 returns the bfloat16 kernel when the CPU has one and the
// active SGEMM kernel is an AVX-512 one (DUEL_ISA did not ask for less).
func chooseBF16(ks []*kernel, sgemmKernel *kernel) *kernel {
	if len(ks) == 0 || sgemmKernel.lanes != 16 {
		return nil
	}
	return withDerived(ks[:1])[0]
}

// sgemmBF16 runs p as SgemmBF16 on at most maxThreads threads.
func sgemmBF16(p problem, maxThreads int) {
	if p.trivial() {
		return
	}
	threads := threadsUpTo(2*float64(p.m)*float64(p.n)*float64(p.k), maxThreads)
	if activeBF16 == nil {
		emulateBF16(p, threads)
		return
	}
	nativeBF16(activeBF16, p, threads)
}

// emulateBF16 computes p as Sgemm of the factors rounded to bfloat16.
func emulateBF16(p problem, threads int) {
	ar, ac, br, bc := p.stored()
	ra := getWords(ar * ac)
	rb := getWords(br * bc)
	roundMatrix(*ra, p.a, p.lda, ar, ac, threads)
	roundMatrix(*rb, p.b, p.ldb, br, bc, threads)
	sgemm(active, problem{p.transA, p.transB, p.m, p.n, p.k, p.alpha, *ra, ac, *rb, bc, p.beta, p.c, p.ldc, nil}, threads)
	putWords(ra)
	putWords(rb)
}

// roundMatrix writes the r x c matrix x (row stride ld) rounded to
// bfloat16, as float32, into dst with row stride c.
func roundMatrix(dst, x []float32, ld, r, c, threads int) {
	par.For(r, rowWorkers(r*c, threads), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, out := x[i*ld:i*ld+c], dst[i*c:i*c+c]
			for j, v := range row {
				out[j] = RoundBF16(v)
			}
		}
	})
}

// nativeBF16 computes p with the bfloat16 kernel kn: both factors become
// matrices of words holding bfloat16 pairs along k (k2 = ceil(k/2) words,
// a zero in the last pair's upper half when k is odd), and Sgemm's driver
// multiplies them with alpha 1, so that it only copies words. alpha, when
// not 1, multiplies the float32 product afterwards.
func nativeBF16(kn *kernel, p problem, threads int) {
	k2 := (p.k + 1) / 2
	// op(A) with k contiguous in memory (A not transposed) gives rows of
	// pairs, m x k2; with k down its rows (transposed), row pairs, k2 x m.
	// Strides padded off multiples of 1 KiB (UncrowdedStride): the driver
	// reads these words in place.
	var a2, b2 *[]float32
	var lda2, ldb2 int
	if p.transA {
		lda2 = UncrowdedStride(p.m)
		a2 = getWords(k2 * lda2)
		pairRows(*a2, lda2, p.a, p.lda, p.k, p.m, threads)
	} else {
		lda2 = UncrowdedStride(k2)
		a2 = getWords(p.m * lda2)
		pairCols(*a2, lda2, p.a, p.lda, p.m, p.k, threads)
	}
	if p.transB {
		ldb2 = UncrowdedStride(k2)
		b2 = getWords(p.n * ldb2)
		pairCols(*b2, ldb2, p.b, p.ldb, p.n, p.k, threads)
	} else {
		ldb2 = UncrowdedStride(p.n)
		b2 = getWords(k2 * ldb2)
		pairRows(*b2, ldb2, p.b, p.ldb, p.k, p.n, threads)
	}
	q := problem{p.transA, p.transB, p.m, p.n, k2, 1, *a2, lda2, *b2, ldb2, p.beta, p.c, p.ldc, nil}
	var tmp *[]float32
	if p.alpha != 1 {
		if p.beta != 0 {
			tmp = getWords(p.m * p.n)
			q.c, q.ldc, q.beta = *tmp, p.n, 0
		}
	}
	pairedProduct(kn, q, threads)
	if p.alpha != 1 {
		finishAlpha(p, tmp)
		if tmp != nil {
			putWords(tmp)
		}
	}
	putWords(a2)
	putWords(b2)
}

// finishAlpha applies alpha to the product in C (tmp nil: C = alpha*C) or,
// with a product in tmp (m x n), C = alpha*tmp + beta*C.
func finishAlpha(p problem, tmp *[]float32) {
	for i := 0; i < p.m; i++ {
		row := p.c[i*p.ldc : i*p.ldc+p.n]
		if tmp == nil {
			for j := range row {
				row[j] *= p.alpha
			}
			continue
		}
		t := (*tmp)[i*p.n : i*p.n+p.n]
		for j := range row {
			row[j] = p.alpha*t[j] + p.beta*row[j]
		}
	}
}

// UncrowdedStride returns the row stride to give a matrix of cols words
// (or floats) that the GEMM reads in place: cols, or 16 more when cols is
// a multiple of 256 (1 KiB), whose rows would all fall into the same few
// cache sets (a convolution's bf16 passes run faster on patch matrices so
// padded: bench/RESULTS.md, "bfloat16 on the CPU").
func UncrowdedStride(cols int) int {
	if cols > 0 && cols%256 == 0 {
		return cols + 16
	}
	return cols
}

// pairCols writes the r x c matrix x (row stride ld) as r rows of
// ceil(c/2) words ldd apart, word j of a row the bfloat16 pair of columns
// 2j and 2j+1 (the lower half the even one; zero past c).
func pairCols(dst []float32, ldd int, x []float32, ld, r, c, threads int) {
	c2 := (c + 1) / 2
	par.For(r, rowWorkers(r*c, threads), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pairColsRow(dst[i*ldd:i*ldd+c2], x[i*ld:i*ld+c])
		}
	})
}

// pairColsRow writes one row of pairCols.
func pairColsRow(dst, row []float32) {
	done := cvtBF16(dst, row)
	for j := done; j < len(row); j += 2 {
		lo := uint32(roundBF16(row[j]))
		var hi uint32
		if j+1 < len(row) {
			hi = uint32(roundBF16(row[j+1]))
		}
		dst[j/2] = math.Float32frombits(lo | hi<<16)
	}
}

// pairRows writes the r x c matrix x (row stride ld) as ceil(r/2) rows of
// c words ldd apart, word j of row i the bfloat16 pair of rows 2i and
// 2i+1 at column j (the lower half row 2i; zero past r).
func pairRows(dst []float32, ldd int, x []float32, ld, r, c, threads int) {
	r2 := (r + 1) / 2
	par.For(r2, rowWorkers(r*c, threads), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out := dst[i*ldd : i*ldd+c]
			r0 := x[2*i*ld : 2*i*ld+c]
			if 2*i+1 == r {
				for j, v := range r0 {
					out[j] = math.Float32frombits(uint32(roundBF16(v)))
				}
				continue
			}
			r1 := x[(2*i+1)*ld : (2*i+1)*ld+c]
			done := pairRowsBF16(out, r0, r1)
			for j := done; j < c; j++ {
				out[j] = math.Float32frombits(uint32(roundBF16(r0[j])) | uint32(roundBF16(r1[j]))<<16)
			}
		}
	})
}

// rowWorkers is how many goroutines a conversion of n values runs on: the
// product's threads, fewer for small matrices (par.Workers' rule).
func rowWorkers(n, threads int) int { return min(threads, par.Workers(n)) }

// wordPools hold the conversions' buffers between calls, by size class:
// pool c holds buffers of 1<<c floats, so that products of varying sizes
// reuse each other's buffers (a single pool would drop every buffer that
// is too small for the next call and allocate anew).
var wordPools [48]sync.Pool

// sizeClass returns the class of a buffer of n floats: ceil(log2(n)).
func sizeClass(n int) int { return bits.Len(uint(max(n, 1) - 1)) }

// getWords returns a buffer of n floats (contents undefined).
func getWords(n int) *[]float32 {
	c := sizeClass(n)
	if v, ok := wordPools[c].Get().(*[]float32); ok {
		*v = (*v)[:n]
		return v
	}
	s := make([]float32, n, 1<<c)
	return &s
}

// putWords returns a buffer of getWords to its pool.
func putWords(s *[]float32) { wordPools[sizeClass(cap(*s))].Put(s) }
