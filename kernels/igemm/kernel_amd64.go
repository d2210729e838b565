//go:build amd64 && !noasm

package igemm

import (
	"unsafe"

	"github.com/duel-ssl/duel/kernels/gemm"
	"golang.org/x/sys/cpu"
)

// accelerated: the CPU has AVX-512 VNNI and DUEL_ISA (read by kernels/gemm)
// does not ask for a variant below avx512.
var accelerated = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI && gemm.ISA() == "avx512"

// dotsVNNI computes one MR x NR tile of C from kp pairs of A (rows lda
// int16 apart, read in place) and a packed panel b. Its equivalent Go loop:
//
//	for i := 0; i < MR; i++ {
//		for l := 0; l < NR; l++ {
//			var acc int32
//			for p := 0; p < kp; p++ {
//				acc += int32(a[i*lda+2*p])*int32(b[p*2*NR+2*l]) +
//					int32(a[i*lda+2*p+1])*int32(b[p*2*NR+2*l+1])
//			}
//			c[i*ldc+l] = acc
//		}
//	}
//
//go:noescape
func dotsVNNI(kp int, a *int16, lda int, b *int16, c *int32, ldc int)

// dots runs dotsVNNI on slices, checking that the tile is in bounds.
func dots(kp int, a []int16, lda int, b []int16, c []int32, ldc int) {
	if len(a) < (MR-1)*lda+2*kp || len(b) < kp*2*NR || len(c) < (MR-1)*ldc+NR {
		panic("igemm: tile out of bounds")
	}
	dotsVNNI(kp, unsafe.SliceData(a), lda, unsafe.SliceData(b), unsafe.SliceData(c), ldc)
}
