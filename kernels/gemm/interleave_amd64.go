//go:build amd64 && !noasm

package gemm

import "github.com/duel-ssl/duel/internal/cpu"

// interleave6, interleave14, interleave16 and interleave32 copy w = 6, 14,
// 16 or 32 rows of stride ld into a panel, one scalar at a time with the
// rows addressed from registers. The equivalent Go loop:
//
//	for p := 0; p < kc; p++ {
//		for i := 0; i < w; i++ {
//			dst[p*w+i] = src[i*ld+p]
//		}
//	}
//
//go:noescape
func interleave6(dst, src *float32, ld, kc int)

//go:noescape
func interleave14(dst, src *float32, ld, kc int)

//go:noescape
func interleave16(dst, src *float32, ld, kc int)

//go:noescape
func interleave32(dst, src *float32, ld, kc int)

// transpose6, transpose14, transpose16 and transpose32 are the AVX-512
// versions of interleave<w> for kc16 k steps, a multiple of 16: they read 16
// k steps of each row (one cache line) at once and transpose 16x16 blocks in
// registers, which keeps power-of-two strides from thrashing the L1 cache.
// The equivalent Go loop is interleave<w>'s with kc = kc16.
//
//go:noescape
func transpose6(dst, src *float32, ld, kc16 int)

//go:noescape
func transpose14(dst, src *float32, ld, kc16 int)

//go:noescape
func transpose16(dst, src *float32, ld, kc16 int)

//go:noescape
func transpose32(dst, src *float32, ld, kc16 int)

// packRows6, packRows14, packRows16 and packRows32 pack panels
// micro-panels of w columns from kc rows of stride ld, reading each row once
// from front to back (masked AVX-512 loads and stores). The equivalent Go
// loop:
//
//	for p := 0; p < kc; p++ {
//		for q := 0; q < panels; q++ {
//			copy(dst[q*w*kc+p*w:q*w*kc+p*w+w], src[p*ld+q*w:p*ld+q*w+w])
//		}
//	}
//
//go:noescape
func packRows6(dst, src *float32, ld, kc, panels int)

//go:noescape
func packRows14(dst, src *float32, ld, kc, panels int)

//go:noescape
func packRows16(dst, src *float32, ld, kc, panels int)

//go:noescape
func packRows32(dst, src *float32, ld, kc, panels int)

// packRowsAsm runs packRows<w>, if w has one and the CPU has AVX-512. The
// caller has checked the bounds.
func packRowsAsm(dst, src []float32, w, ld, kc, panels int) bool {
	if !hasTranspose {
		return false
	}
	switch w {
	case 6:
		packRows6(&dst[0], &src[0], ld, kc, panels)
	case 14:
		packRows14(&dst[0], &src[0], ld, kc, panels)
	case 16:
		packRows16(&dst[0], &src[0], ld, kc, panels)
	case 32:
		packRows32(&dst[0], &src[0], ld, kc, panels)
	default:
		return false
	}
	return true
}

// hasTranspose tells whether the AVX-512 transposes and packRows can run;
// set once at initialisation.
var hasTranspose = cpu.Detect().AVX512F

// transpose16AVX2 is interleave16 for kc8 k steps, a multiple of 8, with
// AVX2: 8 k steps of the 16 rows at a time, transposed as two 8x8 blocks in
// registers (the AVX2 kernel's panels are 16 wide, and interleave16's
// scalar moves weigh on an AVX2 machine's training step; the gain:
// bench/RESULTS.md, "Packing B on AVX2-only machines"). The equivalent Go
// loop is interleave16's with kc = kc8.
//
//go:noescape
func transpose16AVX2(dst, src *float32, ld, kc8 int)

// copyRows16AVX2 copies a full 16-wide panel of plain B: the equivalent
// Go loop is
//
//	for p := 0; p < kc; p++ {
//		copy(dst[p*16:p*16+16], src[p*ld:p*ld+16])
//	}
//
// (faster than copy's memmove call per 64-byte row: bench/RESULTS.md,
// "Packing B on AVX2-only machines").
//
//go:noescape
func copyRows16AVX2(dst, src *float32, ld, kc int)

// copyPanelAsm runs copyRows16AVX2 for w = 16 where the CPU has AVX2
// (after checking the bounds: a short slice panics, as copy's would not).
func copyPanelAsm(dst, src []float32, w, ld, kc int) bool {
	if !hasAVX2 || w != 16 || kc == 0 {
		return false
	}
	_ = dst[kc*w-1]
	_ = src[(kc-1)*ld+w-1]
	copyRows16AVX2(&dst[0], &src[0], ld, kc)
	return true
}

// hasAVX2 tells whether the AVX2 packing routines can run; set once at
// initialisation.
var hasAVX2 = cpu.Detect().AVX2

// hasTransposeAVX2 tells whether transpose16AVX2 can run (and no AVX-512
// transpose serves instead); set once at initialisation.
var hasTransposeAVX2 = !hasTranspose && hasAVX2

// interleaveAsm runs the assembly interleave for width w, if there is one.
// The caller has checked the bounds.
func interleaveAsm(dst, src []float32, w, ld, kc int) bool {
	if hasTranspose && kc >= 16 {
		kc16 := kc &^ 15
		if !transposeAsm(dst, src, w, ld, kc16) {
			return false
		}
		if kc == kc16 {
			return true
		}
		return scalarInterleaveAsm(dst[kc16*w:], src[kc16:], w, ld, kc-kc16)
	}
	if hasTransposeAVX2 && w == 16 && kc >= 8 {
		kc8 := kc &^ 7
		transpose16AVX2(&dst[0], &src[0], ld, kc8)
		if kc == kc8 {
			return true
		}
		return scalarInterleaveAsm(dst[kc8*w:], src[kc8:], w, ld, kc-kc8)
	}
	return scalarInterleaveAsm(dst, src, w, ld, kc)
}

// transposeAsm runs transpose<w> on kc16 k steps, if w has one.
func transposeAsm(dst, src []float32, w, ld, kc16 int) bool {
	switch w {
	case 6:
		transpose6(&dst[0], &src[0], ld, kc16)
	case 14:
		transpose14(&dst[0], &src[0], ld, kc16)
	case 16:
		transpose16(&dst[0], &src[0], ld, kc16)
	case 32:
		transpose32(&dst[0], &src[0], ld, kc16)
	default:
		return false
	}
	return true
}

// scalarInterleaveAsm runs interleave<w>, if w has one.
func scalarInterleaveAsm(dst, src []float32, w, ld, kc int) bool {
	switch w {
	case 6:
		interleave6(&dst[0], &src[0], ld, kc)
	case 14:
		interleave14(&dst[0], &src[0], ld, kc)
	case 16:
		interleave16(&dst[0], &src[0], ld, kc)
	case 32:
		interleave32(&dst[0], &src[0], ld, kc)
	default:
		return false
	}
	return true
}
