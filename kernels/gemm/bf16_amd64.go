//go:build amd64 && !noasm

package gemm

import (
	"unsafe"

	"github.com/duel-ssl/duel/internal/cpu"
)

// kernelAVX512BF16 is kernelAVX512 on words holding bfloat16 pairs: each
// of the kc steps multiplies a pair of A's (broadcast) by the pairs of B's
// 32 columns and adds both products to the float32 accumulators
// (VDPBF16PS).
//
//go:noescape
func kernelAVX512BF16(kc int, a, b, c *float32, ldb, ldc int, beta float32)

// kernelAVX512BF16DirectA is kernelAVX512BF16 reading A's words in place.
//
//go:noescape
func kernelAVX512BF16DirectA(kc int, a, b, c *float32, lda, ldb, ldc int, beta float32)

// kernelAVX512BF16x16 is kernelAVX512x16 on bfloat16 pairs.
//
//go:noescape
func kernelAVX512BF16x16(kc int, a, b, c *float32, ldb, ldc int, beta float32)

// kernelAVX512BF16x16DirectA is kernelAVX512BF16x16 reading A's words in place.
//
//go:noescape
func kernelAVX512BF16x16DirectA(kc int, a, b, c *float32, lda, ldb, ldc int, beta float32)

// cvtBF16AVX512 rounds n floats (a multiple of 32) to bfloat16.
//
//go:noescape
func cvtBF16AVX512(dst *uint16, src *float32, n int)

// pairRowsBF16AVX512 writes n words (a multiple of 16), word j the
// bfloat16 pair of r0[j] (lower half) and r1[j].
//
//go:noescape
func pairRowsBF16AVX512(dst *uint32, r0, r1 *float32, n int)

// pairRunsBF16AVX512 writes count runs of n <= 16 words (PairRuns).
//
//go:noescape
func pairRunsBF16AVX512(dst *uint32, r0, r1 *float32, count, n, step, dstStep int, idx *uint16)

// pairRunsAsm runs PairRuns' loop in assembly when the CPU has the
// instructions and n <= 16, and reports whether it did.
func pairRunsAsm(dst []float32, dstStep int, r0, r1 []float32, step, count, n int, reverse bool) bool {
	if !bf16Vector || n > 16 || count == 0 || n == 0 {
		return false
	}
	var idx [32]uint16
	for t := range 16 {
		s := t
		if reverse && t < n {
			s = n - 1 - t
		}
		idx[2*t], idx[2*t+1] = uint16(s), uint16(16+s)
	}
	pairRunsBF16AVX512((*uint32)(unsafe.Pointer(&dst[0])), &r0[0], &r1[0], count, n, step, dstStep, &idx[0])
	return true
}

// bf16Vector: the CPU has the conversions' instructions (AVX512_BF16 and
// AVX512BW's VPERMW) and DUEL_ISA allows AVX-512 (with avx2 or generic the
// Go loops run, as every other kernel's reference does).
var bf16Vector = func() bool {
	d := cpu.Detect()
	return d.AVX512BF16 && d.AVX512BW && d.AVX512F && cpu.ISA() >= cpu.AVX512
}()

// detectBF16 lists the bfloat16 kernels this CPU runs, best first (none
// without AVX512_BF16).
func detectBF16() []*kernel {
	if !bf16Vector {
		return nil
	}
	narrow := &kernel{
		name: "avx512bf16-16x16",
		mr:   mrAVX512BF16x16, nr: nrAVX512BF16x16, lanes: 16,
		micro: kernelAVX512BF16x16, microDirectA: kernelAVX512BF16x16DirectA, bInPlace: true,
	}
	return []*kernel{{
		name: "avx512bf16",
		mr:   mrAVX512BF16, nr: nrAVX512BF16, lanes: 16,
		micro: kernelAVX512BF16, microDirectA: kernelAVX512BF16DirectA, bInPlace: true,
		short: shortAVX512BF16[:], narrow: narrow,
	}, narrow}
}

// cvtBF16 writes the pairs of row (len(dst) >= len(row)/2) for as many
// whole 32-value blocks as the vector routine takes and returns how many
// values of row it converted.
func cvtBF16(dst, row []float32) int {
	n := len(row) &^ 31
	if !bf16Vector || n == 0 {
		return 0
	}
	cvtBF16AVX512((*uint16)(unsafe.Pointer(&dst[0])), &row[0], n)
	return n
}

// cvtBF16Bits rounds as many whole 32-value blocks of src into dst as
// the vector routine takes and returns how many.
func cvtBF16Bits(dst []uint16, src []float32) int {
	n := len(src) &^ 31
	if !bf16Vector || n == 0 {
		return 0
	}
	cvtBF16AVX512(&dst[0], &src[0], n)
	return n
}

// pairRowsBF16 writes out[j] = pair(r0[j], r1[j]) for as many whole
// 16-column blocks as the vector routine takes and returns how many.
func pairRowsBF16(out, r0, r1 []float32) int {
	n := len(out) &^ 15
	if !bf16Vector || n == 0 {
		return 0
	}
	pairRowsBF16AVX512((*uint32)(unsafe.Pointer(&out[0])), &r0[0], &r1[0], n)
	return n
}
