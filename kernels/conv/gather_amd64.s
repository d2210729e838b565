//go:build !noasm

#include "textflag.h"

// func gatherRows16(dst, src *float32, cs int, tabs *patchTap, ntap, t0, rows int)
//
// Row i of the 16-wide panel dst: tap t = (t0+i) mod ntap of the channel
// (t0+i) / ntap counted from src's; the 16 floats at
// src + 4*(channel*cs + tabs[t].off), ANDed with tabs[t].mask.
// A patchTap is 72 bytes: off (8 bytes), then the 16 lane masks.
TEXT ·gatherRows16(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ cs+16(FP), DX
	SHLQ $2, DX
	MOVQ tabs+24(FP), R8
	MOVQ ntap+32(FP), R9
	MOVQ t0+40(FP), R10
	MOVQ rows+48(FP), CX
	IMUL3Q $72, R9, R12
	ADDQ R8, R12            // R12 = &tabs[ntap]
	IMUL3Q $72, R10, R11
	ADDQ R8, R11            // R11 = &tabs[t0]
	TESTQ CX, CX
	JLE done

loop:
	MOVQ (R11), AX
	LEAQ (SI)(AX*4), BX
	VMOVUPS (BX), Y0
	VMOVUPS 32(BX), Y1
	VANDPS 8(R11), Y0, Y0
	VANDPS 40(R11), Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, DI
	ADDQ $72, R11
	CMPQ R11, R12
	JNE next
	MOVQ R8, R11
	ADDQ DX, SI

next:
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET

// TRANSPOSE8 transposes the 8x8 block in Y0-Y7 (rows) through Y8-Y15 and
// stores column p, the p-th value of every row, at p*64+half(DI): the
// 8 rows' half of panel rows p = 0..7 (as kernels/gemm's transpose16AVX2).
#define TRANSPOSE8(half) \
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

// LOADMASKED8(first) loads, into Y0-Y7, 8 values of rows first..first+7:
// row i's pointer at i*8(AX), its masks' at i*8(BX), both offset by R9
// bytes, the values ANDed with the masks.
#define LOADMASKED8(first) \
	MOVQ ((first+0)*8)(AX), R10 \
	MOVQ ((first+0)*8)(BX), R11 \
	VMOVUPS (R10)(R9*1), Y0 \
	VANDPS (R11)(R9*1), Y0, Y0 \
	MOVQ ((first+1)*8)(AX), R10 \
	MOVQ ((first+1)*8)(BX), R11 \
	VMOVUPS (R10)(R9*1), Y1 \
	VANDPS (R11)(R9*1), Y1, Y1 \
	MOVQ ((first+2)*8)(AX), R10 \
	MOVQ ((first+2)*8)(BX), R11 \
	VMOVUPS (R10)(R9*1), Y2 \
	VANDPS (R11)(R9*1), Y2, Y2 \
	MOVQ ((first+3)*8)(AX), R10 \
	MOVQ ((first+3)*8)(BX), R11 \
	VMOVUPS (R10)(R9*1), Y3 \
	VANDPS (R11)(R9*1), Y3, Y3 \
	MOVQ ((first+4)*8)(AX), R10 \
	MOVQ ((first+4)*8)(BX), R11 \
	VMOVUPS (R10)(R9*1), Y4 \
	VANDPS (R11)(R9*1), Y4, Y4 \
	MOVQ ((first+5)*8)(AX), R10 \
	MOVQ ((first+5)*8)(BX), R11 \
	VMOVUPS (R10)(R9*1), Y5 \
	VANDPS (R11)(R9*1), Y5, Y5 \
	MOVQ ((first+6)*8)(AX), R10 \
	MOVQ ((first+6)*8)(BX), R11 \
	VMOVUPS (R10)(R9*1), Y6 \
	VANDPS (R11)(R9*1), Y6, Y6 \
	MOVQ ((first+7)*8)(AX), R10 \
	MOVQ ((first+7)*8)(BX), R11 \
	VMOVUPS (R10)(R9*1), Y7 \
	VANDPS (R11)(R9*1), Y7, Y7

// func transposeGather16(dst *float32, rows *[16]*float32, masks *[16]*uint32, n8 int)
//
// dst[p*16+i] = rows[i][p] AND masks[i][p] for i < 16, p < 8*n8: per 8
// positions, rows 0-7 and then 8-15 loaded, masked, transposed and
// stored as the two halves of 8 panel rows.
TEXT ·transposeGather16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ rows+8(FP), AX
	MOVQ masks+16(FP), BX
	MOVQ n8+24(FP), CX
	XORQ R9, R9              // the byte offset of the current 8 positions
	TESTQ CX, CX
	JLE tgdone
tgloop:
	LOADMASKED8(0)
	TRANSPOSE8(0)
	LOADMASKED8(8)
	TRANSPOSE8(32)
	ADDQ $32, R9
	ADDQ $512, DI
	DECQ CX
	JNZ tgloop
tgdone:
	VZEROUPPER
	RET
