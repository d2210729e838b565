//go:build amd64 && !noasm

#include "textflag.h"

// The loops of affine.go with AVX2: 8 floats per iteration, then a scalar
// tail with the same instructions on the low lane. Operand order is Go's:
// VSUBPS b, a, d computes d = a - b.

// func affineAVX2(dst, x []float32, mu, a, b float32)
// dst[i] = (x[i]-mu)*a + b
TEXT ·affineAVX2(SB), NOSPLIT, $0-60
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS mu+48(FP), Y1
	VBROADCASTSS a+52(FP), Y2
	VBROADCASTSS b+56(FP), Y3

affine8:
	CMPQ    CX, $8
	JL      affine1
	VMOVUPS (SI), Y0
	VSUBPS  Y1, Y0, Y0
	VMULPS  Y2, Y0, Y0
	VADDPS  Y3, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     affine8

affine1:
	TESTQ  CX, CX
	JE     affineDone
	VMOVSS (SI), X0
	VSUBSS X1, X0, X0
	VMULSS X2, X0, X0
	VADDSS X3, X0, X0
	VMOVSS X0, (DI)
	ADDQ   $4, SI
	ADDQ   $4, DI
	DECQ   CX
	JMP    affine1

affineDone:
	VZEROUPPER
	RET

// func affineReLUAVX2(dst, x []float32, mu, a, b float32)
// dst[i] = relu32((x[i]-mu)*a + b): negative values (sign bit set) cleared.
TEXT ·affineReLUAVX2(SB), NOSPLIT, $0-60
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS mu+48(FP), Y1
	VBROADCASTSS a+52(FP), Y2
	VBROADCASTSS b+56(FP), Y3

relu8:
	CMPQ    CX, $8
	JL      relu1
	VMOVUPS (SI), Y0
	VSUBPS  Y1, Y0, Y0
	VMULPS  Y2, Y0, Y0
	VADDPS  Y3, Y0, Y0
	VPSRAD  $31, Y0, Y5
	VANDNPS Y0, Y5, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     relu8

relu1:
	TESTQ   CX, CX
	JE      reluDone
	VMOVSS  (SI), X0
	VSUBSS  X1, X0, X0
	VMULSS  X2, X0, X0
	VADDSS  X3, X0, X0
	VPSRAD  $31, X0, X5
	VANDNPS X0, X5, X0
	VMOVSS  X0, (DI)
	ADDQ    $4, SI
	ADDQ    $4, DI
	DECQ    CX
	JMP     relu1

reluDone:
	VZEROUPPER
	RET

// func affineAddReLUAVX2(dst, x, r []float32, mu, a, b float32)
// dst[i] = relu32((x[i]-mu)*a + b + r[i])
TEXT ·affineAddReLUAVX2(SB), NOSPLIT, $0-84
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         r_base+48(FP), DX
	VBROADCASTSS mu+72(FP), Y1
	VBROADCASTSS a+76(FP), Y2
	VBROADCASTSS b+80(FP), Y3

add8:
	CMPQ    CX, $8
	JL      add1
	VMOVUPS (SI), Y0
	VSUBPS  Y1, Y0, Y0
	VMULPS  Y2, Y0, Y0
	VADDPS  Y3, Y0, Y0
	VMOVUPS (DX), Y4
	VADDPS  Y4, Y0, Y0
	VPSRAD  $31, Y0, Y5
	VANDNPS Y0, Y5, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     add8

add1:
	TESTQ   CX, CX
	JE      addDone
	VMOVSS  (SI), X0
	VSUBSS  X1, X0, X0
	VMULSS  X2, X0, X0
	VADDSS  X3, X0, X0
	VMOVSS  (DX), X4
	VADDSS  X4, X0, X0
	VPSRAD  $31, X0, X5
	VANDNPS X0, X5, X0
	VMOVSS  X0, (DI)
	ADDQ    $4, SI
	ADDQ    $4, DX
	ADDQ    $4, DI
	DECQ    CX
	JMP     add1

addDone:
	VZEROUPPER
	RET

// func maskPositiveAVX2(dx, dy, y []float32)
// dx[i] = dy[i] where y[i] > 0 (ordered: NaN is not), else 0.
TEXT ·maskPositiveAVX2(SB), NOSPLIT, $0-72
	MOVQ   dx_base+0(FP), DI
	MOVQ   dx_len+8(FP), CX
	MOVQ   dy_base+24(FP), SI
	MOVQ   y_base+48(FP), DX
	VXORPS Y4, Y4, Y4

mask8:
	CMPQ    CX, $8
	JL      mask1
	VMOVUPS (DX), Y1
	VCMPPS  $0x1e, Y4, Y1, Y2
	VMOVUPS (SI), Y0
	VANDPS  Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     mask8

mask1:
	TESTQ  CX, CX
	JE     maskDone
	VMOVSS (DX), X1
	VCMPSS $0x1e, X4, X1, X2
	VMOVSS (SI), X0
	VANDPS X2, X0, X0
	VMOVSS X0, (DI)
	ADDQ   $4, SI
	ADDQ   $4, DX
	ADDQ   $4, DI
	DECQ   CX
	JMP    mask1

maskDone:
	VZEROUPPER
	RET

// HSUM8(Y, X, T) leaves in the low lane of X the lanes of Y combined as
// hsum8 does: (j, j+4), then (0, 2) and (1, 3), then (0, 1).
#define HSUM8(Y, X, XT) \
	VEXTRACTF128 $1, Y, XT \
	VADDPS       XT, X, X  \
	VMOVHLPS     X, X, XT  \
	VADDPS       XT, X, X  \
	VMOVSHDUP    X, XT     \
	VADDSS       XT, X, X

// func sum8AVX2(x []float32) (s float32)
TEXT ·sum8AVX2(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPS Y0, Y0, Y0

sum8:
	CMPQ   CX, $8
	JL     sumTail
	VADDPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JMP    sum8

sumTail:
	HSUM8(Y0, X0, X1)

sum1:
	TESTQ  CX, CX
	JE     sumDone
	VADDSS (SI), X0, X0
	ADDQ   $4, SI
	DECQ   CX
	JMP    sum1

sumDone:
	VMOVSS X0, s+24(FP)
	VZEROUPPER
	RET

