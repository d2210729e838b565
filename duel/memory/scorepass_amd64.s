//go:build !noasm

#include "textflag.h"

// func scorePassAVX512(n int, key *int64, ins, del *int32, shift uint) (best, dsum int64)
//
// Z0 the best key per lane, Z4 the sum of ins per lane over the keys
// above keyLive (Z5), X6 the shift count.
TEXT ·scorePassAVX512(SB), NOSPLIT, $0-56
	MOVQ n+0(FP), CX
	MOVQ key+8(FP), DI
	MOVQ ins+16(FP), SI
	MOVQ del+24(FP), DX
	MOVQ shift+32(FP), X6
	MOVQ $0x8000000000000000, AX
	VPBROADCASTQ AX, Z0
	VPXORQ Z4, Z4, Z4
	MOVQ $-0x2000000000000000, AX
	VPBROADCASTQ AX, Z5
	SHRQ $3, CX
	JEQ reduce

loop:
	VPMOVSXDQ (SI), Z1
	VPMOVSXDQ (DX), Z2
	VPSUBQ Z2, Z1, Z3
	VPSLLQ X6, Z3, Z3
	VPADDQ (DI), Z3, Z3
	VMOVDQU64 Z3, (DI)
	VPMAXSQ Z3, Z0, Z0
	VPCMPQ $6, Z5, Z3, K1
	VPADDQ Z1, Z4, K1, Z4
	ADDQ $64, DI
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNE loop

reduce:
	VEXTRACTI64X4 $1, Z0, Y1
	VPMAXSQ Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXSQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXSQ X1, X0, X0
	MOVQ X0, best+40(FP)
	VEXTRACTI64X4 $1, Z4, Y1
	VPADDQ Y1, Y4, Y4
	VEXTRACTI128 $1, Y4, X1
	VPADDQ X1, X4, X4
	VPSHUFD $0x4e, X4, X1
	VPADDQ X1, X4, X4
	MOVQ X4, dsum+48(FP)
	VZEROUPPER
	RET
