//go:build amd64 && !noasm

#include "textflag.h"

// The loops of vec.go with AVX2: 8 floats per iteration, then a scalar tail
// with the same instructions on the low lane. Operand order is Go's:
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

// func bnDxAVX2(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32)
// dx[i] = scale * ((dy[i] - mdy) - ((x[i]-mu)*is)*mdyx); dx may alias dy.
TEXT ·bnDxAVX2(SB), NOSPLIT, $0-92
	MOVQ         dx_base+0(FP), DI
	MOVQ         dx_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         dy_base+48(FP), DX
	VBROADCASTSS scale+72(FP), Y6
	VBROADCASTSS is+76(FP), Y7
	VBROADCASTSS mu+80(FP), Y8
	VBROADCASTSS mdy+84(FP), Y9
	VBROADCASTSS mdyx+88(FP), Y10

dx8:
	CMPQ    CX, $8
	JL      dx1
	VMOVUPS (SI), Y0
	VSUBPS  Y8, Y0, Y0
	VMULPS  Y7, Y0, Y0
	VMULPS  Y10, Y0, Y0
	VMOVUPS (DX), Y1
	VSUBPS  Y9, Y1, Y1
	VSUBPS  Y0, Y1, Y1
	VMULPS  Y1, Y6, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     dx8

dx1:
	TESTQ  CX, CX
	JE     dxDone
	VMOVSS (SI), X0
	VSUBSS X8, X0, X0
	VMULSS X7, X0, X0
	VMULSS X10, X0, X0
	VMOVSS (DX), X1
	VSUBSS X9, X1, X1
	VSUBSS X0, X1, X1
	VMULSS X1, X6, X1
	VMOVSS X1, (DI)
	ADDQ   $4, SI
	ADDQ   $4, DX
	ADDQ   $4, DI
	DECQ   CX
	JMP    dx1

dxDone:
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

// func sqDev8AVX2(x []float32, mu float32) (s float32)
TEXT ·sqDev8AVX2(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS mu+24(FP), Y3
	VXORPS       Y0, Y0, Y0

sq8:
	CMPQ    CX, $8
	JL      sqTail
	VMOVUPS (SI), Y1
	VSUBPS  Y3, Y1, Y1
	VMULPS  Y1, Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     sq8

sqTail:
	HSUM8(Y0, X0, X2)

sq1:
	TESTQ  CX, CX
	JE     sqDone
	VMOVSS (SI), X1
	VSUBSS X3, X1, X1
	VMULSS X1, X1, X1
	VADDSS X1, X0, X0
	ADDQ   $4, SI
	DECQ   CX
	JMP    sq1

sqDone:
	VMOVSS X0, s+32(FP)
	VZEROUPPER
	RET

// func bnSumsAVX2(dy, x []float32, mu float32) (s, sx float32)
TEXT ·bnSumsAVX2(SB), NOSPLIT, $0-64
	MOVQ         dy_base+0(FP), SI
	MOVQ         dy_len+8(FP), CX
	MOVQ         x_base+24(FP), DX
	VBROADCASTSS mu+48(FP), Y3
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1

sums8:
	CMPQ    CX, $8
	JL      sumsTail
	VMOVUPS (SI), Y4
	VADDPS  Y4, Y0, Y0
	VMOVUPS (DX), Y5
	VSUBPS  Y3, Y5, Y5
	VMULPS  Y5, Y4, Y5
	VADDPS  Y5, Y1, Y1
	ADDQ    $32, SI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     sums8

sumsTail:
	HSUM8(Y0, X0, X6)
	HSUM8(Y1, X1, X6)

sums1:
	TESTQ  CX, CX
	JE     sumsDone
	VMOVSS (SI), X4
	VADDSS X4, X0, X0
	VMOVSS (DX), X5
	VSUBSS X3, X5, X5
	VMULSS X5, X4, X5
	VADDSS X5, X1, X1
	ADDQ   $4, SI
	ADDQ   $4, DX
	DECQ   CX
	JMP    sums1

sumsDone:
	VMOVSS X0, s+56(FP)
	VMOVSS X1, sx+60(FP)
	VZEROUPPER
	RET

// func bnSumsMaskedAVX2(dy, x, y []float32, mu float32) (s, sx float32)
TEXT ·bnSumsMaskedAVX2(SB), NOSPLIT, $0-88
	MOVQ         dy_base+0(FP), SI
	MOVQ         dy_len+8(FP), CX
	MOVQ         x_base+24(FP), DX
	MOVQ         y_base+48(FP), BX
	VBROADCASTSS mu+72(FP), Y3
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y7, Y7, Y7

msums8:
	CMPQ    CX, $8
	JL      msumsTail
	VMOVUPS (BX), Y2
	VCMPPS  $0x1e, Y7, Y2, Y2
	VMOVUPS (SI), Y4
	VANDPS  Y2, Y4, Y4
	VADDPS  Y4, Y0, Y0
	VMOVUPS (DX), Y5
	VSUBPS  Y3, Y5, Y5
	VMULPS  Y5, Y4, Y5
	VADDPS  Y5, Y1, Y1
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	SUBQ    $8, CX
	JMP     msums8

msumsTail:
	HSUM8(Y0, X0, X6)
	HSUM8(Y1, X1, X6)

msums1:
	TESTQ  CX, CX
	JE     msumsDone
	VMOVSS (BX), X2
	VCMPSS $0x1e, X7, X2, X2
	VMOVSS (SI), X4
	VANDPS X2, X4, X4
	VADDSS X4, X0, X0
	VMOVSS (DX), X5
	VSUBSS X3, X5, X5
	VMULSS X5, X4, X5
	VADDSS X5, X1, X1
	ADDQ   $4, SI
	ADDQ   $4, DX
	ADDQ   $4, BX
	DECQ   CX
	JMP    msums1

msumsDone:
	VMOVSS X0, s+80(FP)
	VMOVSS X1, sx+84(FP)
	VZEROUPPER
	RET
