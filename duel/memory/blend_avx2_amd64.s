//go:build !noasm

#include "textflag.h"

// func blendAVX2(dst, row, src *int32, base int, idx, tick *int32, after int32, n int)
//
// Eight entries at a time: Y0 after in every lane, Y1 tick, then tick >
// after (all ones or zeros in every lane), Y2 row (then the blend), Y3
// idx. VPGATHERDD reads only the lanes of the mask Y1 (and clears it,
// recomputed for every eight); when no lane is set it is skipped.
TEXT ·blendAVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ src+16(FP), AX
	MOVQ base+24(FP), R8
	LEAQ (AX)(R8*4), AX
	MOVQ idx+32(FP), BX
	MOVQ tick+40(FP), DX
	MOVL after+48(FP), R9
	MOVQ n+56(FP), CX
	TESTQ CX, CX
	JEQ done
	VMOVD R9, X0
	VPBROADCASTD X0, Y0
	SHRQ $3, CX

loop:
	VMOVDQU (DX), Y1
	VMOVDQU (SI), Y2
	VPCMPGTD Y0, Y1, Y1
	VPTEST Y1, Y1
	JZ store
	VMOVDQU (BX), Y3
	VPGATHERDD Y1, (AX)(Y3*4), Y2

store:
	VMOVDQU Y2, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DX
	DECQ CX
	JNE loop
	VZEROUPPER

done:
	RET
