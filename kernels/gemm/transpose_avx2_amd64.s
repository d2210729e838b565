//go:build !noasm

#include "textflag.h"

// TRANSPOSE8 loads 8 floats at off(base) from the 8 rows whose addresses
// are r0..r7 (Plan 9 address expressions), transposes the 8x8 block in
// Y0-Y7 (through Y8-Y15) and stores column p (the p-th float of every row)
// at p*64+half(DI): the 8 rows' halves of panel rows p = 0..7.
#define TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7, half) \
	VMOVUPS r0, Y0 \
	VMOVUPS r1, Y1 \
	VMOVUPS r2, Y2 \
	VMOVUPS r3, Y3 \
	VMOVUPS r4, Y4 \
	VMOVUPS r5, Y5 \
	VMOVUPS r6, Y6 \
	VMOVUPS r7, Y7 \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15 \
	VMOVUPS Y8, (0*64+half)(DI) \
	VMOVUPS Y9, (1*64+half)(DI) \
	VMOVUPS Y10, (2*64+half)(DI) \
	VMOVUPS Y11, (3*64+half)(DI) \
	VMOVUPS Y12, (4*64+half)(DI) \
	VMOVUPS Y13, (5*64+half)(DI) \
	VMOVUPS Y14, (6*64+half)(DI) \
	VMOVUPS Y15, (7*64+half)(DI)

// func transpose16AVX2(dst, src *float32, ld, kc8 int)
// dst[p*16+i] = src[i*ld+p] for i < 16, p < kc8 (a multiple of 8): 8 k
// steps of the 16 rows at a time, two 8x8 transposes.
TEXT ·transpose16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), AX
	MOVQ ld+16(FP), R8
	MOVQ kc8+24(FP), CX
	SHLQ $2, R8               // the row stride in bytes
	LEAQ (R8)(R8*2), R9       // 3 rows
	LEAQ (AX)(R8*4), BX       // row 4
	LEAQ (BX)(R8*4), DX       // row 8
	LEAQ (DX)(R8*4), SI       // row 12
	SHRQ $3, CX
	JEQ done
loop:
	TRANSPOSE8((AX), (AX)(R8*1), (AX)(R8*2), (AX)(R9*1), (BX), (BX)(R8*1), (BX)(R8*2), (BX)(R9*1), 0)
	TRANSPOSE8((DX), (DX)(R8*1), (DX)(R8*2), (DX)(R9*1), (SI), (SI)(R8*1), (SI)(R8*2), (SI)(R9*1), 32)
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, DX
	ADDQ $32, SI
	ADDQ $512, DI
	DECQ CX
	JNE loop
done:
	VZEROUPPER
	RET

// func copyRows16AVX2(dst, src *float32, ld, kc int)
// dst[p*16+j] = src[p*ld+j] for j < 16, p < kc: a full 16-wide panel of
// plain B, two 32-byte moves a row.
TEXT ·copyRows16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	MOVQ kc+24(FP), CX
	SHLQ $2, R8
	TESTQ CX, CX
	JEQ copydone
copyloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ R8, SI
	ADDQ $64, DI
	DECQ CX
	JNE copyloop
copydone:
	VZEROUPPER
	RET
