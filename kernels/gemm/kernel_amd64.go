//go:build amd64 && !noasm

package gemm

import "github.com/duel-ssl/duel/internal/cpu"

// kernelAVX512 is the AVX-512 micro-kernel for a 14x32 tile (28 zmm
// accumulators, two zmm of B per k step, A broadcast with VBROADCASTSS). Its
// equivalent Go loop, with mr = 14 and nr = 32:
//
//	for p := 0; p < kc; p++ {
//		for i := 0; i < mr; i++ {
//			for j := 0; j < nr; j++ {
//				acc[i][j] += a[p*mr+i] * b[p*ldb+j]
//			}
//		}
//	}
//	for i := 0; i < mr; i++ {
//		for j := 0; j < nr; j++ {
//			if beta == 0 {
//				c[i*ldc+j] = acc[i][j]
//			} else {
//				c[i*ldc+j] = acc[i][j] + beta*c[i*ldc+j]
//			}
//		}
//	}
//
//go:noescape
func kernelAVX512(kc int, a, b, c *float32, ldb, ldc int, beta float32)

// kernelAVX512DirectA is kernelAVX512 reading A in place: a[i*lda+p]
// instead of a[p*mr+i] in the loop above. It spares packing A when each of
// its elements serves few columns of C.
//
//go:noescape
func kernelAVX512DirectA(kc int, a, b, c *float32, lda, ldb, ldc int, beta float32)

// kernelAVX512x16 is the AVX-512 micro-kernel for a 16x16 tile (16 zmm
// accumulators, one zmm of B per k step). Its equivalent Go loop is
// kernelAVX512's with mr = 16 and nr = 16. It serves products whose rows
// fill 16-row tiles better than 14-row ones (see kernel.narrow).
//
//go:noescape
func kernelAVX512x16(kc int, a, b, c *float32, ldb, ldc int, beta float32)

// kernelAVX512x16DirectA is kernelAVX512x16 reading A in place.
//
//go:noescape
func kernelAVX512x16DirectA(kc int, a, b, c *float32, lda, ldb, ldc int, beta float32)

// kernelAVX2 is the AVX2+FMA micro-kernel for a 6x16 tile (12 ymm
// accumulators). Its equivalent Go loop is kernelAVX512's with mr = 6 and
// nr = 16.
//
//go:noescape
func kernelAVX2(kc int, a, b, c *float32, ldb, ldc int, beta float32)

// detect lists the kernels this CPU runs (internal/cpu), best first,
// without their blocking (see withDerived).
func detect() []*kernel {
	var ks []*kernel
	d := cpu.Detect()
	if d.AVX512F && d.AVX512VL {
		narrow := &kernel{
			name: "avx512-16x16",
			mr:   mrAVX512x16, nr: nrAVX512x16, lanes: 16,
			micro: kernelAVX512x16, microDirectA: kernelAVX512x16DirectA, bInPlace: true,
		}
		ks = append(ks, &kernel{
			name: "avx512",
			mr:   mrAVX512, nr: nrAVX512, lanes: 16,
			micro: kernelAVX512, microDirectA: kernelAVX512DirectA, bInPlace: true,
			short: shortAVX512[:], narrow: narrow,
		}, narrow)
	}
	if d.AVX2 && d.FMA {
		ks = append(ks, &kernel{
			name: "avx2",
			mr:   mrAVX2, nr: nrAVX2, lanes: 8,
			micro: kernelAVX2, short: shortAVX2[:],
		})
	}
	return append(ks, genericKernel)
}
