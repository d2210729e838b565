//go:build amd64 && !noasm

#include "textflag.h"

// TILE16 moves one 16x16 tile (see transposeTilesAVX512), its sixteen
// runs stored by ST (VMOVDQU32, or VMOVNTDQ for the streaming kernel).
#define TILE16(ST) \
	LEAQ (SI)(R9*4), BX; \
	LEAQ (BX)(R9*4), DX; \
	LEAQ (DX)(R9*4), R10; \
	VMOVDQU (SI), X0; \
	VINSERTI32X4 $1, (BX), Z0, Z0; \
	VINSERTI32X4 $2, (DX), Z0, Z0; \
	VINSERTI32X4 $3, (R10), Z0, Z0; \
	VMOVDQU (SI)(R9*1), X1; \
	VINSERTI32X4 $1, (BX)(R9*1), Z1, Z1; \
	VINSERTI32X4 $2, (DX)(R9*1), Z1, Z1; \
	VINSERTI32X4 $3, (R10)(R9*1), Z1, Z1; \
	VMOVDQU (SI)(R9*2), X2; \
	VINSERTI32X4 $1, (BX)(R9*2), Z2, Z2; \
	VINSERTI32X4 $2, (DX)(R9*2), Z2, Z2; \
	VINSERTI32X4 $3, (R10)(R9*2), Z2, Z2; \
	VMOVDQU (SI)(R11*1), X3; \
	VINSERTI32X4 $1, (BX)(R11*1), Z3, Z3; \
	VINSERTI32X4 $2, (DX)(R11*1), Z3, Z3; \
	VINSERTI32X4 $3, (R10)(R11*1), Z3, Z3; \
	VMOVDQU 16(SI), X4; \
	VINSERTI32X4 $1, 16(BX), Z4, Z4; \
	VINSERTI32X4 $2, 16(DX), Z4, Z4; \
	VINSERTI32X4 $3, 16(R10), Z4, Z4; \
	VMOVDQU 16(SI)(R9*1), X5; \
	VINSERTI32X4 $1, 16(BX)(R9*1), Z5, Z5; \
	VINSERTI32X4 $2, 16(DX)(R9*1), Z5, Z5; \
	VINSERTI32X4 $3, 16(R10)(R9*1), Z5, Z5; \
	VMOVDQU 16(SI)(R9*2), X6; \
	VINSERTI32X4 $1, 16(BX)(R9*2), Z6, Z6; \
	VINSERTI32X4 $2, 16(DX)(R9*2), Z6, Z6; \
	VINSERTI32X4 $3, 16(R10)(R9*2), Z6, Z6; \
	VMOVDQU 16(SI)(R11*1), X7; \
	VINSERTI32X4 $1, 16(BX)(R11*1), Z7, Z7; \
	VINSERTI32X4 $2, 16(DX)(R11*1), Z7, Z7; \
	VINSERTI32X4 $3, 16(R10)(R11*1), Z7, Z7; \
	VMOVDQU 32(SI), X8; \
	VINSERTI32X4 $1, 32(BX), Z8, Z8; \
	VINSERTI32X4 $2, 32(DX), Z8, Z8; \
	VINSERTI32X4 $3, 32(R10), Z8, Z8; \
	VMOVDQU 32(SI)(R9*1), X9; \
	VINSERTI32X4 $1, 32(BX)(R9*1), Z9, Z9; \
	VINSERTI32X4 $2, 32(DX)(R9*1), Z9, Z9; \
	VINSERTI32X4 $3, 32(R10)(R9*1), Z9, Z9; \
	VMOVDQU 32(SI)(R9*2), X10; \
	VINSERTI32X4 $1, 32(BX)(R9*2), Z10, Z10; \
	VINSERTI32X4 $2, 32(DX)(R9*2), Z10, Z10; \
	VINSERTI32X4 $3, 32(R10)(R9*2), Z10, Z10; \
	VMOVDQU 32(SI)(R11*1), X11; \
	VINSERTI32X4 $1, 32(BX)(R11*1), Z11, Z11; \
	VINSERTI32X4 $2, 32(DX)(R11*1), Z11, Z11; \
	VINSERTI32X4 $3, 32(R10)(R11*1), Z11, Z11; \
	VMOVDQU 48(SI), X12; \
	VINSERTI32X4 $1, 48(BX), Z12, Z12; \
	VINSERTI32X4 $2, 48(DX), Z12, Z12; \
	VINSERTI32X4 $3, 48(R10), Z12, Z12; \
	VMOVDQU 48(SI)(R9*1), X13; \
	VINSERTI32X4 $1, 48(BX)(R9*1), Z13, Z13; \
	VINSERTI32X4 $2, 48(DX)(R9*1), Z13, Z13; \
	VINSERTI32X4 $3, 48(R10)(R9*1), Z13, Z13; \
	VMOVDQU 48(SI)(R9*2), X14; \
	VINSERTI32X4 $1, 48(BX)(R9*2), Z14, Z14; \
	VINSERTI32X4 $2, 48(DX)(R9*2), Z14, Z14; \
	VINSERTI32X4 $3, 48(R10)(R9*2), Z14, Z14; \
	VMOVDQU 48(SI)(R11*1), X15; \
	VINSERTI32X4 $1, 48(BX)(R11*1), Z15, Z15; \
	VINSERTI32X4 $2, 48(DX)(R11*1), Z15, Z15; \
	VINSERTI32X4 $3, 48(R10)(R11*1), Z15, Z15; \
	VPUNPCKLDQ Z1, Z0, Z16; \
	VPUNPCKHDQ Z1, Z0, Z17; \
	VPUNPCKLDQ Z3, Z2, Z18; \
	VPUNPCKHDQ Z3, Z2, Z19; \
	VPUNPCKLQDQ Z18, Z16, Z20; \
	VPUNPCKHQDQ Z18, Z16, Z21; \
	VPUNPCKLQDQ Z19, Z17, Z22; \
	VPUNPCKHQDQ Z19, Z17, Z23; \
	ST Z20, (DI); \
	ST Z21, (DI)(R8*1); \
	ST Z22, (DI)(R8*2); \
	ST Z23, (DI)(R12*1); \
	VPUNPCKLDQ Z5, Z4, Z24; \
	VPUNPCKHDQ Z5, Z4, Z25; \
	VPUNPCKLDQ Z7, Z6, Z26; \
	VPUNPCKHDQ Z7, Z6, Z27; \
	VPUNPCKLQDQ Z26, Z24, Z28; \
	VPUNPCKHQDQ Z26, Z24, Z29; \
	VPUNPCKLQDQ Z27, Z25, Z30; \
	VPUNPCKHQDQ Z27, Z25, Z31; \
	LEAQ (DI)(R8*4), AX; \
	ST Z28, (AX); \
	ST Z29, (AX)(R8*1); \
	ST Z30, (AX)(R8*2); \
	ST Z31, (AX)(R12*1); \
	VPUNPCKLDQ Z9, Z8, Z16; \
	VPUNPCKHDQ Z9, Z8, Z17; \
	VPUNPCKLDQ Z11, Z10, Z18; \
	VPUNPCKHDQ Z11, Z10, Z19; \
	VPUNPCKLQDQ Z18, Z16, Z20; \
	VPUNPCKHQDQ Z18, Z16, Z21; \
	VPUNPCKLQDQ Z19, Z17, Z22; \
	VPUNPCKHQDQ Z19, Z17, Z23; \
	LEAQ (AX)(R8*4), AX; \
	ST Z20, (AX); \
	ST Z21, (AX)(R8*1); \
	ST Z22, (AX)(R8*2); \
	ST Z23, (AX)(R12*1); \
	VPUNPCKLDQ Z13, Z12, Z24; \
	VPUNPCKHDQ Z13, Z12, Z25; \
	VPUNPCKLDQ Z15, Z14, Z26; \
	VPUNPCKHDQ Z15, Z14, Z27; \
	VPUNPCKLQDQ Z26, Z24, Z28; \
	VPUNPCKHQDQ Z26, Z24, Z29; \
	VPUNPCKLQDQ Z27, Z25, Z30; \
	VPUNPCKHQDQ Z27, Z25, Z31; \
	LEAQ (AX)(R8*4), AX; \
	ST Z28, (AX); \
	ST Z29, (AX)(R8*1); \
	ST Z30, (AX)(R8*2); \
	ST Z31, (AX)(R12*1)

// func transposeTilesAVX512(colT, dots *int32, n, b, w int)
//
// One 16x16 tile per iteration. SI: row 0 of the tile in dots, BX, DX,
// R10: rows 4, 8, 12; R9 = 4w and R11 = 12w bytes (one and three rows).
// Z(4C+j), C, j < 4, gets in its 128-bit lane R the four values of row
// 4R+j in columns 4C..4C+3 (a 16-byte load and three inserts, all from
// memory); a 4x4 transposition inside every lane (two rounds of unpacks)
// then leaves in lane R of its output j the four values of rows
// 4R..4R+3 in column 4C+j: the whole run of column 4C+j, stored to
// colT + (4C+j)*b. DI: run 0 of the tile, AX: run 4C; R8 = 4b and
// R12 = 12b bytes, R13 = 64b bytes (the next tile's run 0).
TEXT ·transposeTilesAVX512(SB), NOSPLIT, $0-40
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
	SHLQ $4, R13
	SHRQ $4, CX

loop:
	TILE16(VMOVDQU32)
	ADDQ $64, SI
	ADDQ R13, DI
	DECQ CX
	JNE loop

	VZEROUPPER
	RET

// func transposeTilesNTAVX512(colT, dots *int32, n, b, w int)
//
// transposeTilesAVX512 with non-temporal stores (VMOVNTDQ: the runs go
// to memory without being read into the cache first, nor evicting what
// the cache holds), then SFENCE, so that they are visible before any
// later store (the caller publishes them with an atomic). colT and every
// run must be 64-byte aligned: colT at a multiple of 64 bytes, b a
// multiple of 16.
TEXT ·transposeTilesNTAVX512(SB), NOSPLIT, $0-40
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
	SHLQ $4, R13
	SHRQ $4, CX

loop:
	TILE16(VMOVNTDQ)
	ADDQ $64, SI
	ADDQ R13, DI
	DECQ CX
	JNE loop

	SFENCE
	VZEROUPPER
	RET
