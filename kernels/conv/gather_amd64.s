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
