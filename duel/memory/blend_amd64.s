//go:build !noasm

#include "textflag.h"

// func blendAVX512(dst, row, src *int32, base int, idx, tick *int32, after int32, n int)
//
// Sixteen entries at a time: Z0 after in every lane, Z1 tick, K1 tick >
// after, Z2 row (then the blend), Z3 idx. VPGATHERDD reads only the lanes
// of K1 (and clears K1, recomputed for every sixteen).
TEXT ·blendAVX512(SB), NOSPLIT, $0-64
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
	VPBROADCASTD R9, Z0
	SHRQ $4, CX

loop:
	VMOVDQU32 (DX), Z1
	VMOVDQU32 (SI), Z2
	VPCMPGTD Z0, Z1, K1
	KORTESTW K1, K1
	JEQ store
	VMOVDQU32 (BX), Z3
	VPGATHERDD (AX)(Z3*4), K1, Z2

store:
	VMOVDQU32 Z2, (DI)
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $64, BX
	ADDQ $64, DX
	DECQ CX
	JNE loop
	VZEROUPPER

done:
	RET

// func prefetchLines(p *int32, n int)
//
// PREFETCHT1 (into L2) of every 64-byte line of p[0:n], n > 0: a row and
// its ring runs are 100-400 lines, more misses than L1 can track at once
// (T1 measured faster than T0 on a whole update). No vector registers:
// used beside the AVX-512 and the AVX2 blend.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ (AX)(CX*4), CX

ploop:
	PREFETCHT1 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLT ploop
	RET
