//go:build !noasm

#include "textflag.h"

// func sumSquares8AVX512(src *float32, z, n int, sums *[8]float64)
//
// Eight components of the 8 rows at a time (n a multiple of 8): the 8x8
// block (Y0-Y7, row r in Yr) is transposed (unpacks, shuffles, 128-bit
// permutes) into its columns Y8-Y15, component c of every row in column
// register c%8; then, column by column in order, widened to float64,
// squared and added to Z16 (the sums, lane r for row r): each lane adds
// its row's squares in order, as the Go loop does. R8: z in bytes, R9 =
// 3z, R10 = 5z, R11 = 7z.
TEXT ·sumSquares8AVX512(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ z+8(FP), R8
	MOVQ n+16(FP), CX
	MOVQ sums+24(FP), DI
	VMOVUPD (DI), Z16
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	LEAQ (R9)(R8*4), R11
	SHRQ $3, CX
	JEQ done

loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (SI)(R8*4), Y4
	VMOVUPS (SI)(R10*1), Y5
	VMOVUPS (SI)(R9*2), Y6
	VMOVUPS (SI)(R11*1), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xee, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xee, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xee, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xee, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VCVTPS2PD Y8, Z17
	VMULPD Z17, Z17, Z17
	VADDPD Z17, Z16, Z16
	VCVTPS2PD Y9, Z17
	VMULPD Z17, Z17, Z17
	VADDPD Z17, Z16, Z16
	VCVTPS2PD Y10, Z17
	VMULPD Z17, Z17, Z17
	VADDPD Z17, Z16, Z16
	VCVTPS2PD Y11, Z17
	VMULPD Z17, Z17, Z17
	VADDPD Z17, Z16, Z16
	VCVTPS2PD Y12, Z17
	VMULPD Z17, Z17, Z17
	VADDPD Z17, Z16, Z16
	VCVTPS2PD Y13, Z17
	VMULPD Z17, Z17, Z17
	VADDPD Z17, Z16, Z16
	VCVTPS2PD Y14, Z17
	VMULPD Z17, Z17, Z17
	VADDPD Z17, Z16, Z16
	VCVTPS2PD Y15, Z17
	VMULPD Z17, Z17, Z17
	VADDPD Z17, Z16, Z16
	ADDQ $32, SI
	DECQ CX
	JNE loop

done:
	VMOVUPD Z16, (DI)
	VZEROUPPER
	RET

// func scaleRowAVX512(dst, src *float32, n int, inv float64)
//
// Sixteen components at a time: widened to float64, times inv (Z0),
// rounded back to float32, as the Go loop does one by one.
TEXT ·scaleRowAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD inv+24(FP), Z0
	SHRQ $4, CX
	JEQ sdone

sloop:
	VCVTPS2PD (SI), Z1
	VCVTPS2PD 32(SI), Z2
	VMULPD Z0, Z1, Z1
	VMULPD Z0, Z2, Z2
	VCVTPD2PS Z1, Y1
	VCVTPD2PS Z2, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNE sloop

sdone:
	VZEROUPPER
	RET

// func gridRowAVX512(dst *int16, src *float32, n int)
//
// Sixteen components at a time: widened to float64, times 2048 (Z5), plus
// 1/2 (Z6), plus 4096 (Z7), each rounded as in gridOf, truncated to int32,
// less 4096 (Z8), narrowed to int16.
TEXT ·gridRowAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ $0x40a0000000000000, AX // 2048.0
	VPBROADCASTQ AX, Z5
	MOVQ $0x3fe0000000000000, AX // 0.5
	VPBROADCASTQ AX, Z6
	MOVQ $0x40b0000000000000, AX // 4096.0
	VPBROADCASTQ AX, Z7
	MOVL $4096, AX
	VPBROADCASTD AX, Z8
	SHRQ $4, CX
	JEQ gdone

gloop:
	VCVTPS2PD (SI), Z1
	VCVTPS2PD 32(SI), Z2
	VMULPD Z5, Z1, Z1
	VMULPD Z5, Z2, Z2
	VADDPD Z6, Z1, Z1
	VADDPD Z6, Z2, Z2
	VADDPD Z7, Z1, Z1
	VADDPD Z7, Z2, Z2
	VCVTTPD2DQ Z1, Y1
	VCVTTPD2DQ Z2, Y2
	VINSERTI64X4 $1, Y2, Z1, Z1
	VPSUBD Z8, Z1, Z1
	VPMOVDW Z1, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNE gloop

gdone:
	VZEROUPPER
	RET
