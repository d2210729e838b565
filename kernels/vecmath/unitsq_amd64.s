//go:build amd64 && !noasm

#include "textflag.h"

// func unitSquaresAVX2(x []float32) (ss float64, ok bool)
// len(x) a multiple of 16. Per block of 16: the four quarters converted to
// float64 (lanes 0-3, 4-7, 8-11, 12-15) and squared into Y8-Y11 (the
// square is exact: a fused multiply-add rounds once, as a sum does); the
// bits without the sign compared (signed) with 1.0's, the results ORed into
// Y14. Then the lanes combined as unitsq.go's hsum16: Y8+Y10 and Y9+Y11
// (j, j+8), their sum (j, j+4), the halves (0, 2) and (1, 3), then (0, 1).
TEXT ·unitSquaresAVX2(SB), NOSPLIT, $0-33
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VXORPD       Y8, Y8, Y8
	VXORPD       Y9, Y9, Y9
	VXORPD       Y10, Y10, Y10
	VXORPD       Y11, Y11, Y11
	VPXOR        Y14, Y14, Y14
	MOVL         $0x7fffffff, AX
	MOVL         AX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0x3f800000, AX
	MOVL         AX, X13
	VPBROADCASTD X13, Y13

block:
	CMPQ        CX, $16
	JL          combine
	VCVTPS2PD   (SI), Y0
	VCVTPS2PD   16(SI), Y1
	VCVTPS2PD   32(SI), Y2
	VCVTPS2PD   48(SI), Y3
	VFMADD231PD Y0, Y0, Y8
	VFMADD231PD Y1, Y1, Y9
	VFMADD231PD Y2, Y2, Y10
	VFMADD231PD Y3, Y3, Y11
	VPAND       (SI), Y12, Y4
	VPAND       32(SI), Y12, Y5
	VPCMPGTD    Y13, Y4, Y4
	VPCMPGTD    Y13, Y5, Y5
	VPOR        Y4, Y14, Y14
	VPOR        Y5, Y14, Y14
	ADDQ        $64, SI
	SUBQ        $16, CX
	JMP         block

combine:
	VADDPD       Y10, Y8, Y8
	VADDPD       Y11, Y9, Y9
	VADDPD       Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPD       X9, X8, X8
	VHADDPD      X8, X8, X8
	VMOVSD       X8, ss+24(FP)
	VPTEST       Y14, Y14
	SETEQ        ok+32(FP)
	VZEROUPPER
	RET
