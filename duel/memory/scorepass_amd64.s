//go:build !noasm

#include "textflag.h"

// func scorePassAVX512(n int, score *float64, ins, del *int32, rank *int, pb *passBest)
//
// passBest: score [8]float64 at 0, rank [8]int at 64, slot [8]int at 128,
// dsum [8]float64 at 192.
//
// Z0 best scores, Z1 their ranks, Z2 their slots, Z3 dsum (of the ins of
// the slots whose new score is above -Inf), Z4 the slots of the current
// eight, Z5 eight 8s, Z6 qUnit (2^-23) in every lane, Z11 -Inf.
TEXT ·scorePassAVX512(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ score+8(FP), DI
	MOVQ ins+16(FP), SI
	MOVQ del+24(FP), DX
	MOVQ rank+32(FP), BX
	MOVQ pb+40(FP), AX
	VMOVUPD 0(AX), Z0
	VMOVDQU64 64(AX), Z1
	VMOVDQU64 128(AX), Z2
	VMOVUPD 192(AX), Z3
	MOVQ $0x0706050403020100, R8
	VMOVQ R8, X4
	VPMOVZXBQ X4, Z4
	MOVQ $8, R8
	VPBROADCASTQ R8, Z5
	MOVQ $0x3e80000000000000, R8
	VPBROADCASTQ R8, Z6
	MOVQ $0xfff0000000000000, R8
	VPBROADCASTQ R8, Z11
	SHRQ $3, CX

loop:
	VCVTDQ2PD (SI), Z7
	VCVTDQ2PD (DX), Z8
	VSUBPD Z8, Z7, Z8
	VMOVUPD (DI), Z9
	VFMADD231PD Z6, Z8, Z9
	VMOVUPD Z9, (DI)
	VCMPPD $0x1e, Z11, Z9, K4
	VADDPD Z7, Z3, K4, Z3
	VMOVDQU64 (BX), Z10
	VCMPPD $0x1e, Z0, Z9, K1
	VCMPPD $0x00, Z0, Z9, K2
	VPCMPQ $1, Z1, Z10, K3
	KANDW K3, K2, K2
	KORW K2, K1, K1
	VMOVAPD Z9, K1, Z0
	VMOVDQA64 Z10, K1, Z1
	VMOVDQA64 Z4, K1, Z2
	VPADDQ Z5, Z4, Z4
	ADDQ $64, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, BX
	DECQ CX
	JNE loop

	VMOVUPD Z0, 0(AX)
	VMOVDQU64 Z1, 64(AX)
	VMOVDQU64 Z2, 128(AX)
	VMOVUPD Z3, 192(AX)
	VZEROUPPER
	RET
