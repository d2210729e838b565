//go:build amd64 && !noasm

#include "textflag.h"

// The loops of loops.go with AVX2, on whole groups of elements (the Go
// wrappers pass lengths that are multiples of 4, or of 8 for EMA). Each
// group's float32 values are widened to float64 (exact), go through the Go
// loop's operations in its order, each rounded as the scalar instruction
// rounds it, and are narrowed once when stored. Operand order is Go's:
// VSUBPD b, a, d computes d = a - b; VDIVPD b, a, d computes d = a / b.

// func sgdAVX2(w, g, buf []float32, k *sgdLoop)
TEXT ·sgdAVX2(SB), NOSPLIT, $0-80
	MOVQ         w_base+0(FP), DI
	MOVQ         w_len+8(FP), CX
	MOVQ         g_base+24(FP), SI
	MOVQ         buf_base+48(FP), BX
	MOVQ         k+72(FP), AX
	VBROADCASTSD 0(AX), Y15  // wd
	VBROADCASTSD 8(AX), Y14  // scale
	VBROADCASTSD 16(AX), Y13 // mom
	VBROADCASTSD 24(AX), Y12 // damp
	VBROADCASTSD 32(AX), Y11 // lr
	MOVQ         40(AX), DX  // mode
	SHRQ         $2, CX

sgdLoop:
	TESTQ     CX, CX
	JE        sgdDone
	VCVTPS2PD (DI), Y0     // x = w
	VCVTPS2PD (SI), Y1     // g
	VMULPD    Y15, Y0, Y2  // wd*x
	VADDPD    Y2, Y1, Y1   // g + wd*x
	VMULPD    Y14, Y1, Y1  // d = (g + wd*x) * scale
	TESTQ     $1, DX       // modeMomentum
	JE        sgdStep
	TESTQ     $2, DX       // modeFirst
	JNE       sgdFirst
	VCVTPS2PD (BX), Y3     // buf
	VMULPD    Y13, Y3, Y3  // mom*buf
	VMULPD    Y12, Y1, Y4  // damp*d
	VADDPD    Y4, Y3, Y3   // v = mom*buf + damp*d
	JMP       sgdStore

sgdFirst:
	VMOVAPD Y1, Y3 // v = d

sgdStore:
	VCVTPD2PSY Y3, X4
	VMOVUPS    X4, (BX)
	ADDQ       $16, BX
	TESTQ      $4, DX      // modeNesterov
	JE         sgdPlain
	VMULPD     Y13, Y3, Y4 // mom*v
	VADDPD     Y4, Y1, Y1  // d = d + mom*v
	JMP        sgdStep

sgdPlain:
	VMOVAPD Y3, Y1 // d = v

sgdStep:
	VMULPD     Y11, Y1, Y1 // lr*d
	VSUBPD     Y1, Y0, Y0  // x - lr*d
	VCVTPD2PSY Y0, X0
	VMOVUPS    X0, (DI)
	ADDQ       $16, DI
	ADDQ       $16, SI
	DECQ       CX
	JMP        sgdLoop

sgdDone:
	VZEROUPPER
	RET

// func adamAVX2(w, g, m, v []float32, k *adamLoop)
TEXT ·adamAVX2(SB), NOSPLIT, $0-104
	MOVQ         w_base+0(FP), DI
	MOVQ         w_len+8(FP), CX
	MOVQ         g_base+24(FP), SI
	MOVQ         m_base+48(FP), R8
	MOVQ         v_base+72(FP), R9
	MOVQ         k+96(FP), AX
	VBROADCASTSD 0(AX), Y15  // decay
	VBROADCASTSD 8(AX), Y14  // l2
	VBROADCASTSD 16(AX), Y13 // b1
	VBROADCASTSD 24(AX), Y12 // c1
	VBROADCASTSD 32(AX), Y11 // b2
	VBROADCASTSD 40(AX), Y10 // c2
	VBROADCASTSD 48(AX), Y9  // stepSize
	VBROADCASTSD 56(AX), Y8  // invSqrtBC2
	VBROADCASTSD 64(AX), Y7  // eps
	SHRQ         $2, CX

adamLoop:
	TESTQ      CX, CX
	JE         adamDone
	VCVTPS2PD  (DI), Y0
	VMULPD     Y15, Y0, Y0 // x = w*decay
	VCVTPS2PD  (SI), Y1
	VMULPD     Y14, Y0, Y2 // l2*x
	VADDPD     Y2, Y1, Y1  // gj = g + l2*x
	VCVTPS2PD  (R8), Y2
	VMULPD     Y13, Y2, Y2 // b1*m
	VMULPD     Y12, Y1, Y3 // c1*gj
	VADDPD     Y3, Y2, Y2  // mj
	VCVTPS2PD  (R9), Y3
	VMULPD     Y11, Y3, Y3 // b2*v
	VMULPD     Y10, Y1, Y4 // c2*gj
	VMULPD     Y1, Y4, Y4  // (c2*gj)*gj
	VADDPD     Y4, Y3, Y3  // vj
	VCVTPD2PSY Y2, X4
	VMOVUPS    X4, (R8)
	VCVTPD2PSY Y3, X4
	VMOVUPS    X4, (R9)
	VSQRTPD    Y3, Y3
	VMULPD     Y8, Y3, Y3  // sqrt(vj)*invSqrtBC2
	VADDPD     Y7, Y3, Y3  // + eps
	VMULPD     Y9, Y2, Y2  // stepSize*mj
	VDIVPD     Y3, Y2, Y2  // stepSize*mj / (...)
	VSUBPD     Y2, Y0, Y0  // x - ...
	VCVTPD2PSY Y0, X0
	VMOVUPS    X0, (DI)
	ADDQ       $16, DI
	ADDQ       $16, SI
	ADDQ       $16, R8
	ADDQ       $16, R9
	DECQ       CX
	JMP        adamLoop

adamDone:
	VZEROUPPER
	RET

// func emaAVX2(target, online []float32, mf, of float32)
TEXT ·emaAVX2(SB), NOSPLIT, $0-56
	MOVQ         target_base+0(FP), DI
	MOVQ         target_len+8(FP), CX
	MOVQ         online_base+24(FP), SI
	VBROADCASTSS mf+48(FP), Y15
	VBROADCASTSS of+52(FP), Y14
	SHRQ         $3, CX

emaLoop:
	TESTQ   CX, CX
	JE      emaDone
	VMOVUPS (DI), Y0
	VMULPS  Y15, Y0, Y0 // mf*target
	VMOVUPS (SI), Y1
	VMULPS  Y14, Y1, Y1 // of*online
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JMP     emaLoop

emaDone:
	VZEROUPPER
	RET
