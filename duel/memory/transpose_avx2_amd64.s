//go:build !noasm

#include "textflag.h"

// HALF4 transposes four columns of an 8x8 tile: aj (xj its low half),
// j < 4, gets row j of the columns at byte offset off (four of them) in
// its low lane and row 4+j in its high lane (rows 0 and 4 at r0 and r4,
// row j at +j*R9 bytes, R11 = 3*R9); a 4x4 transposition inside both
// lanes (two rounds of unpacks, through t0-t3) leaves in aj the eight
// rows of column off/4+j.
#define HALF4(r0, r4, off, x0, x1, x2, x3, a0, a1, a2, a3, t0, t1, t2, t3) \
	VMOVDQU off(r0), x0; \
	VINSERTI128 $1, off(r4), a0, a0; \
	VMOVDQU off(r0)(R9*1), x1; \
	VINSERTI128 $1, off(r4)(R9*1), a1, a1; \
	VMOVDQU off(r0)(R9*2), x2; \
	VINSERTI128 $1, off(r4)(R9*2), a2, a2; \
	VMOVDQU off(r0)(R11*1), x3; \
	VINSERTI128 $1, off(r4)(R11*1), a3, a3; \
	VPUNPCKLDQ a1, a0, t0; \
	VPUNPCKHDQ a1, a0, t1; \
	VPUNPCKLDQ a3, a2, t2; \
	VPUNPCKHDQ a3, a2, t3; \
	VPUNPCKLQDQ t2, t0, a0; \
	VPUNPCKHQDQ t2, t0, a1; \
	VPUNPCKLQDQ t3, t1, a2; \
	VPUNPCKHQDQ t3, t1, a3

// TILE8 transposes the 8x8 tile of rows r0..r0+3 and r4..r4+3, columns
// 0..7 of the current eight, into the eight runs at DI + c*R8 + off
// (R12 = 3*R8), stored by ST (VMOVDQU, or VMOVNTDQ for the streaming
// kernel); AX is clobbered.
#define TILE8(r0, r4, off, ST) \
	HALF4(r0, r4, 0, X0, X1, X2, X3, Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11); \
	HALF4(r0, r4, 16, X4, X5, X6, X7, Y4, Y5, Y6, Y7, Y12, Y13, Y14, Y15); \
	ST Y0, off(DI); \
	ST Y1, off(DI)(R8*1); \
	ST Y2, off(DI)(R8*2); \
	ST Y3, off(DI)(R12*1); \
	LEAQ (DI)(R8*4), AX; \
	ST Y4, off(AX); \
	ST Y5, off(AX)(R8*1); \
	ST Y6, off(AX)(R8*2); \
	ST Y7, off(AX)(R12*1)

// func transposeTilesAVX2(colT, dots *int32, n, b, w int)
//
// Sixteen rows by eight columns per iteration, as two 8x8 tiles (rows
// 0-7 and 8-15) stored to the first and the second half of the eight
// runs. SI: row 0 of the tile in dots, BX, DX, R10: rows 4, 8, 12; R9 =
// 4w and R11 = 12w bytes (one and three rows). DI: run 0 of the tile; R8
// = 4b and R12 = 12b bytes, R13 = 32b bytes (the next tile's run 0).
TEXT ·transposeTilesAVX2(SB), NOSPLIT, $0-40
	MOVQ colT+0(FP), DI
	MOVQ dots+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ b+24(FP), R8
	MOVQ w+32(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	LEAQ (R8)(R8*2), R12
	LEAQ (R9)(R9*2), R11
	MOVQ R8, R13
	SHLQ $3, R13
	SHRQ $3, CX

loop:
	LEAQ (SI)(R9*4), BX
	LEAQ (BX)(R9*4), DX
	LEAQ (DX)(R9*4), R10
	TILE8(SI, BX, 0, VMOVDQU)
	TILE8(DX, R10, 32, VMOVDQU)
	ADDQ $32, SI
	ADDQ R13, DI
	DECQ CX
	JNE loop

	VZEROUPPER
	RET

// func transposeTilesNTAVX2(colT, dots *int32, n, b, w int)
//
// transposeTilesAVX2 with non-temporal stores (VMOVNTDQ, see
// transposeTilesNTAVX512), then SFENCE. colT must be 64-byte aligned and
// b a multiple of 16.
TEXT ·transposeTilesNTAVX2(SB), NOSPLIT, $0-40
	MOVQ colT+0(FP), DI
	MOVQ dots+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ b+24(FP), R8
	MOVQ w+32(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	LEAQ (R8)(R8*2), R12
	LEAQ (R9)(R9*2), R11
	MOVQ R8, R13
	SHLQ $3, R13
	SHRQ $3, CX

loop:
	LEAQ (SI)(R9*4), BX
	LEAQ (BX)(R9*4), DX
	LEAQ (DX)(R9*4), R10
	TILE8(SI, BX, 0, VMOVNTDQ)
	TILE8(DX, R10, 32, VMOVNTDQ)
	ADDQ $32, SI
	ADDQ R13, DI
	DECQ CX
	JNE loop

	SFENCE
	VZEROUPPER
	RET
