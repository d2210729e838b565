//go:build !noasm

#include "textflag.h"

// The AMX tile kernel of SgemmPairedBF16 and SgemmBF16 (DUEL_ISA=amx; see
// amx.go). The Go assembler has no AMX mnemonics, so each instruction is
// written out as the bytes GNU as 2.40 assembles for the AT&T line in its
// comment (TILELOADD and TILESTORED always take a SIB byte: base, stride
// register, scale 1).

// func tileBF16AMX(cfg *byte, steps int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, load int)
// The 32 x 32 block of C at c (rows ldc floats apart) becomes, or (load
// != 0) gains, the product of the 32 rows of A at a (lda words apart,
// steps x 16 pairs of k each) by the steps x 16 rows of B at b (ldb words
// apart, 32 words each): tiles 0-3 hold C (rows 0-15 and 16-31, columns
// 0-15 and 16-31), 4-5 A's two row halves, 6-7 B's two column halves; cfg
// is the 64-byte tile configuration amxConfig writes.
TEXT ·tileBF16AMX(SB), NOSPLIT, $0-72
	MOVQ cfg+0(FP), DI
	MOVQ steps+8(FP), CX
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), R8
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R9
	MOVQ c+48(FP), BX
	MOVQ ldc+56(FP), R10
	MOVQ load+64(FP), AX
	SHLQ $2, R8               // A's row stride in bytes
	SHLQ $2, R9               // B's
	SHLQ $2, R10              // C's
	MOVQ R8, R12
	SHLQ $4, R12
	ADDQ SI, R12              // A's rows 16-31
	MOVQ R9, R13
	SHLQ $4, R13              // B's advance a step: 16 rows
	MOVQ R10, R11
	SHLQ $4, R11
	ADDQ BX, R11              // C's rows 16-31
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // LDTILECFG (DI)
	TESTQ AX, AX
	JEQ  zero
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x13 // TILELOADD (BX)(R10*1), TMM0
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x4c; BYTE $0x13; BYTE $0x40 // TILELOADD 64(BX)(R10*1), TMM1
	BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x13 // TILELOADD (R11)(R10*1), TMM2
	BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x5c; BYTE $0x13; BYTE $0x40 // TILELOADD 64(R11)(R10*1), TMM3
	JMP  run

zero:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // TILEZERO TMM0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // TILEZERO TMM1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // TILEZERO TMM2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // TILEZERO TMM3

run:
	TESTQ CX, CX
	JEQ  store

step:
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x06 // TILELOADD (SI)(R8*1), TMM4: A rows 0-15
	BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x04 // TILELOADD (R12)(R8*1), TMM5: A rows 16-31
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x0a // TILELOADD (DX)(R9*1), TMM6: B columns 0-15
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x7c; BYTE $0x0a; BYTE $0x40 // TILELOADD 64(DX)(R9*1), TMM7: B columns 16-31
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4 // TDPBF16PS TMM6, TMM4, TMM0: C00 += A0 B0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc // TDPBF16PS TMM7, TMM4, TMM1: C01 += A0 B1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5 // TDPBF16PS TMM6, TMM5, TMM2: C10 += A1 B0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd // TDPBF16PS TMM7, TMM5, TMM3: C11 += A1 B1
	ADDQ $64, SI
	ADDQ $64, R12
	ADDQ R13, DX
	DECQ CX
	JNE  step

store:
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x13 // TILESTORED TMM0, (BX)(R10*1)
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x13; BYTE $0x40 // TILESTORED TMM1, 64(BX)(R10*1)
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x13 // TILESTORED TMM2, (R11)(R10*1)
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x5c; BYTE $0x13; BYTE $0x40 // TILESTORED TMM3, 64(R11)(R10*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // TILERELEASE
	RET
