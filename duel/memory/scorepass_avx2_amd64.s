//go:build !noasm

#include "textflag.h"

// func scorePassAVX2(n int, score *float64, ins, del *int32, rank *int, pb *passBest)
//
// passBest: score [8]float64 at 0, rank [8]int at 64, slot [8]int at 128,
// dsum [8]float64 at 192. Eight slots per iteration in two groups of four
// lanes: group A (slots c%8 < 4) in Y0-Y3 and Y8, group B (c%8 >= 4) in
// Y4-Y7 and Y9, so that lane l of pb covers the slots c%8 == l as in
// scorePassAVX512.
//
// Y0/Y4 best scores, Y1/Y5 their ranks, Y2/Y6 their slots, Y3/Y7 dsum (of
// the ins of the slots whose new score is above -Inf), Y8/Y9 the slots of
// the current eight, Y10 qUnit (2^-23) in every lane, Y11 -Inf, Y12 four
// 8s; Y13-Y15 temporaries.
TEXT ·scorePassAVX2(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ score+8(FP), DI
	MOVQ ins+16(FP), SI
	MOVQ del+24(FP), DX
	MOVQ rank+32(FP), BX
	MOVQ pb+40(FP), AX
	VMOVUPD 0(AX), Y0
	VMOVUPD 32(AX), Y4
	VMOVDQU 64(AX), Y1
	VMOVDQU 96(AX), Y5
	VMOVDQU 128(AX), Y2
	VMOVDQU 160(AX), Y6
	VMOVUPD 192(AX), Y3
	VMOVUPD 224(AX), Y7
	MOVQ $0x03020100, R8
	VMOVQ R8, X8
	VPMOVZXBQ X8, Y8
	MOVQ $0x07060504, R8
	VMOVQ R8, X9
	VPMOVZXBQ X9, Y9
	MOVQ $0x3e80000000000000, R8
	VMOVQ R8, X10
	VPBROADCASTQ X10, Y10
	MOVQ $0xfff0000000000000, R8
	VMOVQ R8, X11
	VPBROADCASTQ X11, Y11
	MOVQ $8, R8
	VMOVQ R8, X12
	VPBROADCASTQ X12, Y12
	SHRQ $3, CX

loop:
	// Group A: slots c..c+3.
	VCVTDQ2PD (SI), Y13
	VCVTDQ2PD (DX), Y14
	VSUBPD Y14, Y13, Y14
	VFMADD213PD (DI), Y10, Y14
	VMOVUPD Y14, (DI)
	VCMPPD $0x1e, Y11, Y14, Y15
	VANDPD Y15, Y13, Y13
	VADDPD Y13, Y3, Y3
	VCMPPD $0x00, Y0, Y14, Y13
	VPCMPGTQ (BX), Y1, Y15
	VPAND Y15, Y13, Y13
	VCMPPD $0x1e, Y0, Y14, Y15
	VPOR Y15, Y13, Y13
	VBLENDVPD Y13, Y14, Y0, Y0
	VBLENDVPD Y13, (BX), Y1, Y1
	VBLENDVPD Y13, Y8, Y2, Y2

	// Group B: slots c+4..c+7.
	VCVTDQ2PD 16(SI), Y13
	VCVTDQ2PD 16(DX), Y14
	VSUBPD Y14, Y13, Y14
	VFMADD213PD 32(DI), Y10, Y14
	VMOVUPD Y14, 32(DI)
	VCMPPD $0x1e, Y11, Y14, Y15
	VANDPD Y15, Y13, Y13
	VADDPD Y13, Y7, Y7
	VCMPPD $0x00, Y4, Y14, Y13
	VPCMPGTQ 32(BX), Y5, Y15
	VPAND Y15, Y13, Y13
	VCMPPD $0x1e, Y4, Y14, Y15
	VPOR Y15, Y13, Y13
	VBLENDVPD Y13, Y14, Y4, Y4
	VBLENDVPD Y13, 32(BX), Y5, Y5
	VBLENDVPD Y13, Y9, Y6, Y6

	VPADDQ Y12, Y8, Y8
	VPADDQ Y12, Y9, Y9
	ADDQ $64, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, BX
	DECQ CX
	JNE loop

	VMOVUPD Y0, 0(AX)
	VMOVUPD Y4, 32(AX)
	VMOVDQU Y1, 64(AX)
	VMOVDQU Y5, 96(AX)
	VMOVDQU Y2, 128(AX)
	VMOVDQU Y6, 160(AX)
	VMOVUPD Y3, 192(AX)
	VMOVUPD Y7, 224(AX)
	VZEROUPPER
	RET
