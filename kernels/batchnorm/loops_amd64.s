//go:build amd64 && !noasm

#include "textflag.h"

// The loops of loops.go with AVX2: 8 floats per iteration, then a scalar
// tail with the same instructions on the low lane. Operand order is Go's:
// VSUBPS b, a, d computes d = a - b.

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

// func bnDxMaskedAVX2(dx, x, dy, y []float32, scale, is, mu, mdy, mdyx float32)
// bnDxAVX2 of dy masked where y > 0 (ordered compare: NaN masks); dx may
// alias dy.
TEXT ·bnDxMaskedAVX2(SB), NOSPLIT, $0-116
	MOVQ         dx_base+0(FP), DI
	MOVQ         dx_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         dy_base+48(FP), DX
	MOVQ         y_base+72(FP), BX
	VBROADCASTSS scale+96(FP), Y6
	VBROADCASTSS is+100(FP), Y7
	VBROADCASTSS mu+104(FP), Y8
	VBROADCASTSS mdy+108(FP), Y9
	VBROADCASTSS mdyx+112(FP), Y10
	VXORPS       Y11, Y11, Y11

mdx8:
	CMPQ    CX, $8
	JL      mdx1
	VMOVUPS (SI), Y0
	VSUBPS  Y8, Y0, Y0
	VMULPS  Y7, Y0, Y0
	VMULPS  Y10, Y0, Y0
	VMOVUPS (BX), Y2
	VCMPPS  $0x1e, Y11, Y2, Y2
	VMOVUPS (DX), Y1
	VANDPS  Y2, Y1, Y1
	VSUBPS  Y9, Y1, Y1
	VSUBPS  Y0, Y1, Y1
	VMULPS  Y1, Y6, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     mdx8

mdx1:
	TESTQ  CX, CX
	JE     mdxDone
	VMOVSS (SI), X0
	VSUBSS X8, X0, X0
	VMULSS X7, X0, X0
	VMULSS X10, X0, X0
	VMOVSS (BX), X2
	VCMPSS $0x1e, X11, X2, X2
	VMOVSS (DX), X1
	VANDPS X2, X1, X1
	VSUBSS X9, X1, X1
	VSUBSS X0, X1, X1
	VMULSS X1, X6, X1
	VMOVSS X1, (DI)
	ADDQ   $4, SI
	ADDQ   $4, DX
	ADDQ   $4, BX
	ADDQ   $4, DI
	DECQ   CX
	JMP    mdx1

mdxDone:
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
