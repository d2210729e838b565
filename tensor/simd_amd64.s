//go:build amd64 && !noasm

#include "textflag.h"

// func axpyAVX2(y, x []float32, alpha float32)
//
//	for i := range y { y[i] += alpha * x[i] }
TEXT ·axpyAVX2(SB), NOSPLIT, $0-52
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	VBROADCASTSS alpha+48(FP), Y15
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-32, BX
axpy_32:
	CMPQ AX, BX
	JGE axpy_8s
	VMULPS (SI)(AX*4), Y15, Y0
	VMULPS 32(SI)(AX*4), Y15, Y1
	VMULPS 64(SI)(AX*4), Y15, Y2
	VMULPS 96(SI)(AX*4), Y15, Y3
	VADDPS (DI)(AX*4), Y0, Y0
	VADDPS 32(DI)(AX*4), Y1, Y1
	VADDPS 64(DI)(AX*4), Y2, Y2
	VADDPS 96(DI)(AX*4), Y3, Y3
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	ADDQ $32, AX
	JMP axpy_32
axpy_8s:
	MOVQ CX, BX
	ANDQ $-8, BX
axpy_8:
	CMPQ AX, BX
	JGE axpy_1
	VMULPS (SI)(AX*4), Y15, Y0
	VADDPS (DI)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	JMP axpy_8
axpy_1:
	CMPQ AX, CX
	JGE axpy_done
	VMULSS (SI)(AX*4), X15, X0
	VADDSS (DI)(AX*4), X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ AX
	JMP axpy_1
axpy_done:
	VZEROUPPER
	RET

// func reluAVX2(d, s []float32)
//
//	for i := range d { d[i] = s[i] if s[i] > 0, else 0 (also for NaN and -0) }
//
// VMAXPS x, 0 returns its second source operand (+0) when either is NaN or
// both are zeros, which is exactly the Go loop's result; x must therefore
// be the first source, so it is loaded into a register (a memory operand
// can only be the second).
TEXT ·reluAVX2(SB), NOSPLIT, $0-48
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ s_base+24(FP), SI
	VXORPS Y15, Y15, Y15
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-32, BX
relu_32:
	CMPQ AX, BX
	JGE relu_8s
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS 64(SI)(AX*4), Y2
	VMOVUPS 96(SI)(AX*4), Y3
	VMAXPS Y15, Y0, Y0
	VMAXPS Y15, Y1, Y1
	VMAXPS Y15, Y2, Y2
	VMAXPS Y15, Y3, Y3
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	ADDQ $32, AX
	JMP relu_32
relu_8s:
	MOVQ CX, BX
	ANDQ $-8, BX
relu_8:
	CMPQ AX, BX
	JGE relu_1
	VMOVUPS (SI)(AX*4), Y0
	VMAXPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	JMP relu_8
relu_1:
	CMPQ AX, CX
	JGE relu_done
	VMOVSS (SI)(AX*4), X0
	VMAXSS X15, X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ AX
	JMP relu_1
relu_done:
	VZEROUPPER
	RET

// func sum64AVX2(x []float32) float64
//
//	for _, v := range x { s += float64(v) }   (16 partial sums in 4 ymm)
TEXT ·sum64AVX2(SB), NOSPLIT, $0-32
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-16, BX
sum_16:
	CMPQ AX, BX
	JGE sum_fold
	VCVTPS2PD (SI)(AX*4), Y4
	VCVTPS2PD 16(SI)(AX*4), Y5
	VCVTPS2PD 32(SI)(AX*4), Y6
	VCVTPS2PD 48(SI)(AX*4), Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $16, AX
	JMP sum_16
sum_fold:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
sum_1:
	CMPQ AX, CX
	JGE sum_done
	VCVTSS2SD (SI)(AX*4), X1, X1
	VADDSD X1, X0, X0
	INCQ AX
	JMP sum_1
sum_done:
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func accumulate64AVX2(acc []float64, x []float32)
//
//	for i := range acc { acc[i] += float64(x[i]) }
TEXT ·accumulate64AVX2(SB), NOSPLIT, $0-48
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
acc_8:
	CMPQ AX, BX
	JGE acc_1
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y1
	VADDPD (DI)(AX*8), Y0, Y0
	VADDPD 32(DI)(AX*8), Y1, Y1
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	ADDQ $8, AX
	JMP acc_8
acc_1:
	CMPQ AX, CX
	JGE acc_done
	VCVTSS2SD (SI)(AX*4), X0, X0
	VADDSD (DI)(AX*8), X0, X0
	VMOVSD X0, (DI)(AX*8)
	INCQ AX
	JMP acc_1
acc_done:
	VZEROUPPER
	RET
