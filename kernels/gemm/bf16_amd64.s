//go:build !noasm

#include "textflag.h"

// The bfloat16 conversions of SgemmBF16 (AVX512_BF16 and AVX512BW). The Go
// assembler has no mnemonic for VCVTNE2PS2BF16, so its EVEX bytes are
// written out: VCVTNE2PS2BF16 zmm1, zmm2, zmm3 (EVEX.512.F2.0F38.W0 72 /r)
// rounds the 16 floats of zmm3 into the lower 16 words of zmm1 and those
// of zmm2 into the upper 16, to nearest even, denormals as zero (the rule
// roundBF16 transcribes).

// bf16PairIndex makes VPERMW interleave the two halves of a register:
// word 2j from word j (the even row), word 2j+1 from word 16+j (the odd row).
DATA bf16PairIndex<>+0(SB)/8, $0x0011000100100000
DATA bf16PairIndex<>+8(SB)/8, $0x0013000300120002
DATA bf16PairIndex<>+16(SB)/8, $0x0015000500140004
DATA bf16PairIndex<>+24(SB)/8, $0x0017000700160006
DATA bf16PairIndex<>+32(SB)/8, $0x0019000900180008
DATA bf16PairIndex<>+40(SB)/8, $0x001b000b001a000a
DATA bf16PairIndex<>+48(SB)/8, $0x001d000d001c000c
DATA bf16PairIndex<>+56(SB)/8, $0x001f000f001e000e
GLOBL bf16PairIndex<>(SB), RODATA|NOPTR, $64

// func cvtBF16AVX512(dst *uint16, src *float32, n int)
// dst[i] = roundBF16(src[i]) for i < n, n a multiple of 32.
TEXT ·cvtBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	JEQ  cvtdone

cvtloop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // VCVTNE2PS2BF16 Z0, Z1, Z2
	VMOVDQU32 Z2, (DI)
	ADDQ $128, SI
	ADDQ $64, DI
	DECQ CX
	JNE  cvtloop

cvtdone:
	VZEROUPPER
	RET

// func pairRowsBF16AVX512(dst *uint32, r0, r1 *float32, n int)
// dst[j] = roundBF16(r0[j]) | roundBF16(r1[j])<<16 for j < n, n a multiple of 16.
TEXT ·pairRowsBF16AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ r0+8(FP), SI
	MOVQ r1+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JEQ  pairdone
	VMOVDQU32 bf16PairIndex<>(SB), Z3

pairloop:
	VMOVUPS (SI), Z0
	VMOVUPS (DX), Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // VCVTNE2PS2BF16 Z0, Z1, Z2
	VPERMW  Z2, Z3, Z4
	VMOVDQU32 Z4, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	DECQ CX
	JNE  pairloop

pairdone:
	VZEROUPPER
	RET

// func pairRunsBF16AVX512(dst *uint32, r0, r1 *float32, count, n, step, dstStep int, idx *uint16)
// For i < count: dst[i*dstStep + t] = the bfloat16 pair of r0[i*step + s]
// and r1[i*step + s] for t < n (n <= 16), where word t takes lower half
// idx[2t] and upper half idx[2t+1] - 16 of the run's rounded values
// (the pair index, or its reverse). Strides in elements; lanes past n are
// neither read nor written (masked).
TEXT ·pairRunsBF16AVX512(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ r0+8(FP), SI
	MOVQ r1+16(FP), DX
	MOVQ n+32(FP), CX
	MOVQ step+40(FP), R8
	MOVQ dstStep+48(FP), R9
	MOVQ idx+56(FP), R10
	SHLQ $2, R8
	SHLQ $2, R9
	MOVQ $1, BX
	SHLQ CX, BX
	DECQ BX
	KMOVW BX, K1
	MOVQ count+24(FP), CX
	VMOVDQU32 (R10), Z3
	TESTQ CX, CX
	JEQ  runsdone

runsloop:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DX), K1, Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // VCVTNE2PS2BF16 Z0, Z1, Z2
	VPERMW  Z2, Z3, Z4
	VMOVDQU32 Z4, K1, (DI)
	ADDQ R8, SI
	ADDQ R8, DX
	ADDQ R9, DI
	DECQ CX
	JNE  runsloop

runsdone:
	VZEROUPPER
	RET
