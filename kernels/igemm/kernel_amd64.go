//go:build amd64 && !noasm

package igemm

import (
	"unsafe"

	"github.com/duel-ssl/duel/internal/cpu"
)

// available lists the kernels this CPU and DUEL_ISA (read by internal/cpu:
// cpu.ISA()) allow, best first; the last one is the pure-Go kernel. The
// VNNI kernel needs AVX-512 BW and VNNI and ISA avx512; the AVX2 kernel
// needs ISA avx512 or avx2, so that DUEL_ISA=avx2 runs it on an AVX-512 CPU
// and DUEL_ISA=generic runs neither.
var available = detect()

// detect returns the kernels internal/cpu allows, best first.
func detect() []kernel {
	var ks []kernel
	if d := cpu.Detect(); cpu.AllowAVX512() && d.AVX512BW && d.AVX512VNNI {
		ks = append(ks, kernVNNI)
	}
	if cpu.AllowAVX2() {
		ks = append(ks, kernAVX2)
	}
	return append(ks, kernGeneric)
}

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

// dotsAVX2 computes the same tile as dotsVNNI with AVX2 (VPMADDWD and
// VPADDD), in four passes of two rows of A over the panel.
//
//go:noescape
func dotsAVX2(kp int, a *int16, lda int, b *int16, c *int32, ldc int)

// dots runs the assembly kernel kn on slices, checking that the tile is in
// bounds.
func dots(kn kernel, kp int, a []int16, lda int, b []int16, c []int32, ldc int) {
	if len(a) < (MR-1)*lda+2*kp || len(b) < kp*2*NR || len(c) < (MR-1)*ldc+NR {
		panic("igemm: tile out of bounds")
	}
	switch kn {
	case kernVNNI:
		dotsVNNI(kp, unsafe.SliceData(a), lda, unsafe.SliceData(b), unsafe.SliceData(c), ldc)
	case kernAVX2:
		dotsAVX2(kp, unsafe.SliceData(a), lda, unsafe.SliceData(b), unsafe.SliceData(c), ldc)
	default:
		panic("igemm: no assembly kernel " + kn.String())
	}
}
