//go:build amd64 && !noasm

#include "textflag.h"

// The elementwise loops of the Winograd transforms (bt4 and at4,
// winograd_amd64.go) with AVX2: 8 floats per iteration, then a scalar
// tail with the same instructions on the low lane. Operand order is Go's:
// VSUBPS b, a, d computes d = a - b.

// func bt4AVX2(d0, d1, d2, d3, a, b, c, d []float32)
// d0 = a-c, d1 = b+c, d2 = c-b, d3 = b-d over len(d0) elements.
TEXT ·bt4AVX2(SB), NOSPLIT, $0-192
	MOVQ d0_base+0(FP), DI
	MOVQ d0_len+8(FP), CX
	MOVQ d1_base+24(FP), R8
	MOVQ d2_base+48(FP), R9
	MOVQ d3_base+72(FP), R10
	MOVQ a_base+96(FP), SI
	MOVQ b_base+120(FP), R11
	MOVQ c_base+144(FP), R12
	MOVQ d_base+168(FP), R13
	XORQ AX, AX

bt8:
	CMPQ    CX, $8
	JL      bt1
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (R11)(AX*4), Y1
	VMOVUPS (R12)(AX*4), Y2
	VMOVUPS (R13)(AX*4), Y3
	VSUBPS  Y2, Y0, Y4
	VADDPS  Y2, Y1, Y5
	VSUBPS  Y1, Y2, Y6
	VSUBPS  Y3, Y1, Y7
	VMOVUPS Y4, (DI)(AX*4)
	VMOVUPS Y5, (R8)(AX*4)
	VMOVUPS Y6, (R9)(AX*4)
	VMOVUPS Y7, (R10)(AX*4)
	ADDQ    $8, AX
	SUBQ    $8, CX
	JMP     bt8

bt1:
	TESTQ  CX, CX
	JE     btDone
	VMOVSS (SI)(AX*4), X0
	VMOVSS (R11)(AX*4), X1
	VMOVSS (R12)(AX*4), X2
	VMOVSS (R13)(AX*4), X3
	VSUBSS X2, X0, X4
	VADDSS X2, X1, X5
	VSUBSS X1, X2, X6
	VSUBSS X3, X1, X7
	VMOVSS X4, (DI)(AX*4)
	VMOVSS X5, (R8)(AX*4)
	VMOVSS X6, (R9)(AX*4)
	VMOVSS X7, (R10)(AX*4)
	INCQ   AX
	DECQ   CX
	JMP    bt1

btDone:
	VZEROUPPER
	RET

// func at4AVX2(s0, s1, a, b, c, d []float32)
// s0 = a+b+c, s1 = b-c-d over len(s0) elements.
TEXT ·at4AVX2(SB), NOSPLIT, $0-144
	MOVQ s0_base+0(FP), DI
	MOVQ s0_len+8(FP), CX
	MOVQ s1_base+24(FP), R8
	MOVQ a_base+48(FP), SI
	MOVQ b_base+72(FP), R11
	MOVQ c_base+96(FP), R12
	MOVQ d_base+120(FP), R13
	XORQ AX, AX

at8:
	CMPQ    CX, $8
	JL      at1
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (R11)(AX*4), Y1
	VMOVUPS (R12)(AX*4), Y2
	VMOVUPS (R13)(AX*4), Y3
	VADDPS  Y1, Y0, Y4
	VADDPS  Y2, Y4, Y4
	VSUBPS  Y2, Y1, Y5
	VSUBPS  Y3, Y5, Y5
	VMOVUPS Y4, (DI)(AX*4)
	VMOVUPS Y5, (R8)(AX*4)
	ADDQ    $8, AX
	SUBQ    $8, CX
	JMP     at8

at1:
	TESTQ  CX, CX
	JE     atDone
	VMOVSS (SI)(AX*4), X0
	VMOVSS (R11)(AX*4), X1
	VMOVSS (R12)(AX*4), X2
	VMOVSS (R13)(AX*4), X3
	VADDSS X1, X0, X4
	VADDSS X2, X4, X4
	VSUBSS X2, X1, X5
	VSUBSS X3, X5, X5
	VMOVSS X4, (DI)(AX*4)
	VMOVSS X5, (R8)(AX*4)
	INCQ   AX
	DECQ   CX
	JMP    at1

atDone:
	VZEROUPPER
	RET
