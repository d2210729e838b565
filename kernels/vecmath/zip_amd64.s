//go:build amd64 && !noasm

#include "textflag.h"

// Interleaving two float rows into one and splitting one into its even and
// odd elements, 8 pairs per iteration with AVX2, then a scalar tail. They
// only move values (zipAddAVX2 adds one float to another), so they match
// their Go references (zipGo, zipAddGo, unzipGo) to the bit.

// func zipAVX2(row, e, o []float32)
// row[2i] = e[i], row[2i+1] = o[i] for i < len(e).
TEXT ·zipAVX2(SB), NOSPLIT, $0-72
	MOVQ row_base+0(FP), DI
	MOVQ e_base+24(FP), SI
	MOVQ e_len+32(FP), CX
	MOVQ o_base+48(FP), R11
	XORQ AX, AX

zip8:
	CMPQ       CX, $8
	JL         zip1
	VMOVUPS    (SI)(AX*4), Y0
	VMOVUPS    (R11)(AX*4), Y1
	VUNPCKLPS  Y1, Y0, Y2
	VUNPCKHPS  Y1, Y0, Y3
	VPERM2F128 $0x20, Y3, Y2, Y4
	VPERM2F128 $0x31, Y3, Y2, Y5
	VMOVUPS    Y4, (DI)(AX*8)
	VMOVUPS    Y5, 32(DI)(AX*8)
	ADDQ       $8, AX
	SUBQ       $8, CX
	JMP        zip8

zip1:
	TESTQ  CX, CX
	JE     zipDone
	VMOVSS (SI)(AX*4), X0
	VMOVSS (R11)(AX*4), X1
	VMOVSS X0, (DI)(AX*8)
	VMOVSS X1, 4(DI)(AX*8)
	INCQ   AX
	DECQ   CX
	JMP    zip1

zipDone:
	VZEROUPPER
	RET

// func zipAddAVX2(row, e, o []float32)
// row[2i] += e[i], row[2i+1] += o[i] for i < len(e).
TEXT ·zipAddAVX2(SB), NOSPLIT, $0-72
	MOVQ row_base+0(FP), DI
	MOVQ e_base+24(FP), SI
	MOVQ e_len+32(FP), CX
	MOVQ o_base+48(FP), R11
	XORQ AX, AX

zipAdd8:
	CMPQ       CX, $8
	JL         zipAdd1
	VMOVUPS    (SI)(AX*4), Y0
	VMOVUPS    (R11)(AX*4), Y1
	VUNPCKLPS  Y1, Y0, Y2
	VUNPCKHPS  Y1, Y0, Y3
	VPERM2F128 $0x20, Y3, Y2, Y4
	VPERM2F128 $0x31, Y3, Y2, Y5
	VMOVUPS    (DI)(AX*8), Y6
	VMOVUPS    32(DI)(AX*8), Y7
	VADDPS     Y4, Y6, Y6
	VADDPS     Y5, Y7, Y7
	VMOVUPS    Y6, (DI)(AX*8)
	VMOVUPS    Y7, 32(DI)(AX*8)
	ADDQ       $8, AX
	SUBQ       $8, CX
	JMP        zipAdd8

zipAdd1:
	TESTQ  CX, CX
	JE     zipAddDone
	VMOVSS (DI)(AX*8), X2
	VMOVSS 4(DI)(AX*8), X3
	VADDSS (SI)(AX*4), X2, X2
	VADDSS (R11)(AX*4), X3, X3
	VMOVSS X2, (DI)(AX*8)
	VMOVSS X3, 4(DI)(AX*8)
	INCQ   AX
	DECQ   CX
	JMP    zipAdd1

zipAddDone:
	VZEROUPPER
	RET

// func unzipAVX2(even, odd, line []float32)
// even[i] = line[2i], odd[i] = line[2i+1] for i < len(even).
TEXT ·unzipAVX2(SB), NOSPLIT, $0-72
	MOVQ even_base+0(FP), DI
	MOVQ even_len+8(FP), CX
	MOVQ odd_base+24(FP), R8
	MOVQ line_base+48(FP), SI
	XORQ AX, AX

unzip8:
	CMPQ    CX, $8
	JL      unzip1
	VMOVUPS (SI)(AX*8), Y0
	VMOVUPS 32(SI)(AX*8), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xDD, Y1, Y0, Y3
	VPERMPD $0xD8, Y2, Y2
	VPERMPD $0xD8, Y3, Y3
	VMOVUPS Y2, (DI)(AX*4)
	VMOVUPS Y3, (R8)(AX*4)
	ADDQ    $8, AX
	SUBQ    $8, CX
	JMP     unzip8

unzip1:
	TESTQ  CX, CX
	JE     unzipDone
	VMOVSS (SI)(AX*8), X0
	VMOVSS 4(SI)(AX*8), X1
	VMOVSS X0, (DI)(AX*4)
	VMOVSS X1, (R8)(AX*4)
	INCQ   AX
	DECQ   CX
	JMP    unzip1

unzipDone:
	VZEROUPPER
	RET
