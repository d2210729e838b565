//go:build arm64 && !noasm

package gemm

// kernelNEON is the arm64 Advanced SIMD micro-kernel for an 8x12 tile (24
// accumulators of 4 lanes, FMLA by element: A is never broadcast),
// written by gen_neon.go. Its equivalent Go loop is kernelAVX512's (see
// kernel_amd64.go) with mr = 8 and nr = 12: every element of C is the
// same chain of fused multiply-adds in k order, then acc + beta*C fused.
//
//go:noescape
func kernelNEON(kc int, a, b, c *float32, ldb, ldc int, beta float32)

// Register tile of the NEON micro-kernel.
const (
	mrNEON = 8
	nrNEON = 12
)

// detect lists the kernels of an arm64 build, best first, without their
// blocking (see withDerived): Advanced SIMD is part of every ARMv8-A
// core, so the NEON kernel always runs, and the pure-Go one stays for
// DUEL_ISA=generic.
func detect() []*kernel {
	return []*kernel{{
		name: "neon",
		mr:   mrNEON, nr: nrNEON, lanes: 4,
		micro: kernelNEON, bInPlace: true,
	}, genericKernel}
}
