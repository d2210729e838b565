//go:build amd64 && !noasm

#include "textflag.h"

// Constants of expf (see exp.go), each repeated in the 8 lanes of a ymm.
DATA expc<>+0x0(SB)/4, $0x3fb8aa3b
DATA expc<>+0x4(SB)/4, $0x3fb8aa3b
DATA expc<>+0x8(SB)/4, $0x3fb8aa3b
DATA expc<>+0xc(SB)/4, $0x3fb8aa3b
DATA expc<>+0x10(SB)/4, $0x3fb8aa3b
DATA expc<>+0x14(SB)/4, $0x3fb8aa3b
DATA expc<>+0x18(SB)/4, $0x3fb8aa3b
DATA expc<>+0x1c(SB)/4, $0x3fb8aa3b
DATA expc<>+0x20(SB)/4, $0x4b400000
DATA expc<>+0x24(SB)/4, $0x4b400000
DATA expc<>+0x28(SB)/4, $0x4b400000
DATA expc<>+0x2c(SB)/4, $0x4b400000
DATA expc<>+0x30(SB)/4, $0x4b400000
DATA expc<>+0x34(SB)/4, $0x4b400000
DATA expc<>+0x38(SB)/4, $0x4b400000
DATA expc<>+0x3c(SB)/4, $0x4b400000
DATA expc<>+0x40(SB)/4, $0x3f318000
DATA expc<>+0x44(SB)/4, $0x3f318000
DATA expc<>+0x48(SB)/4, $0x3f318000
DATA expc<>+0x4c(SB)/4, $0x3f318000
DATA expc<>+0x50(SB)/4, $0x3f318000
DATA expc<>+0x54(SB)/4, $0x3f318000
DATA expc<>+0x58(SB)/4, $0x3f318000
DATA expc<>+0x5c(SB)/4, $0x3f318000
DATA expc<>+0x60(SB)/4, $0xb95e8083
DATA expc<>+0x64(SB)/4, $0xb95e8083
DATA expc<>+0x68(SB)/4, $0xb95e8083
DATA expc<>+0x6c(SB)/4, $0xb95e8083
DATA expc<>+0x70(SB)/4, $0xb95e8083
DATA expc<>+0x74(SB)/4, $0xb95e8083
DATA expc<>+0x78(SB)/4, $0xb95e8083
DATA expc<>+0x7c(SB)/4, $0xb95e8083
DATA expc<>+0x80(SB)/4, $0x39506967
DATA expc<>+0x84(SB)/4, $0x39506967
DATA expc<>+0x88(SB)/4, $0x39506967
DATA expc<>+0x8c(SB)/4, $0x39506967
DATA expc<>+0x90(SB)/4, $0x39506967
DATA expc<>+0x94(SB)/4, $0x39506967
DATA expc<>+0x98(SB)/4, $0x39506967
DATA expc<>+0x9c(SB)/4, $0x39506967
DATA expc<>+0xa0(SB)/4, $0x3ab743ce
DATA expc<>+0xa4(SB)/4, $0x3ab743ce
DATA expc<>+0xa8(SB)/4, $0x3ab743ce
DATA expc<>+0xac(SB)/4, $0x3ab743ce
DATA expc<>+0xb0(SB)/4, $0x3ab743ce
DATA expc<>+0xb4(SB)/4, $0x3ab743ce
DATA expc<>+0xb8(SB)/4, $0x3ab743ce
DATA expc<>+0xbc(SB)/4, $0x3ab743ce
DATA expc<>+0xc0(SB)/4, $0x3c088908
DATA expc<>+0xc4(SB)/4, $0x3c088908
DATA expc<>+0xc8(SB)/4, $0x3c088908
DATA expc<>+0xcc(SB)/4, $0x3c088908
DATA expc<>+0xd0(SB)/4, $0x3c088908
DATA expc<>+0xd4(SB)/4, $0x3c088908
DATA expc<>+0xd8(SB)/4, $0x3c088908
DATA expc<>+0xdc(SB)/4, $0x3c088908
DATA expc<>+0xe0(SB)/4, $0x3d2aa9c1
DATA expc<>+0xe4(SB)/4, $0x3d2aa9c1
DATA expc<>+0xe8(SB)/4, $0x3d2aa9c1
DATA expc<>+0xec(SB)/4, $0x3d2aa9c1
DATA expc<>+0xf0(SB)/4, $0x3d2aa9c1
DATA expc<>+0xf4(SB)/4, $0x3d2aa9c1
DATA expc<>+0xf8(SB)/4, $0x3d2aa9c1
DATA expc<>+0xfc(SB)/4, $0x3d2aa9c1
DATA expc<>+0x100(SB)/4, $0x3e2aaaaa
DATA expc<>+0x104(SB)/4, $0x3e2aaaaa
DATA expc<>+0x108(SB)/4, $0x3e2aaaaa
DATA expc<>+0x10c(SB)/4, $0x3e2aaaaa
DATA expc<>+0x110(SB)/4, $0x3e2aaaaa
DATA expc<>+0x114(SB)/4, $0x3e2aaaaa
DATA expc<>+0x118(SB)/4, $0x3e2aaaaa
DATA expc<>+0x11c(SB)/4, $0x3e2aaaaa
DATA expc<>+0x120(SB)/4, $0x3f000000
DATA expc<>+0x124(SB)/4, $0x3f000000
DATA expc<>+0x128(SB)/4, $0x3f000000
DATA expc<>+0x12c(SB)/4, $0x3f000000
DATA expc<>+0x130(SB)/4, $0x3f000000
DATA expc<>+0x134(SB)/4, $0x3f000000
DATA expc<>+0x138(SB)/4, $0x3f000000
DATA expc<>+0x13c(SB)/4, $0x3f000000
DATA expc<>+0x140(SB)/4, $0x3f800000
DATA expc<>+0x144(SB)/4, $0x3f800000
DATA expc<>+0x148(SB)/4, $0x3f800000
DATA expc<>+0x14c(SB)/4, $0x3f800000
DATA expc<>+0x150(SB)/4, $0x3f800000
DATA expc<>+0x154(SB)/4, $0x3f800000
DATA expc<>+0x158(SB)/4, $0x3f800000
DATA expc<>+0x15c(SB)/4, $0x3f800000
DATA expc<>+0x160(SB)/4, $0xc2ae0000
DATA expc<>+0x164(SB)/4, $0xc2ae0000
DATA expc<>+0x168(SB)/4, $0xc2ae0000
DATA expc<>+0x16c(SB)/4, $0xc2ae0000
DATA expc<>+0x170(SB)/4, $0xc2ae0000
DATA expc<>+0x174(SB)/4, $0xc2ae0000
DATA expc<>+0x178(SB)/4, $0xc2ae0000
DATA expc<>+0x17c(SB)/4, $0xc2ae0000
DATA expc<>+0x180(SB)/4, $0x42b00000
DATA expc<>+0x184(SB)/4, $0x42b00000
DATA expc<>+0x188(SB)/4, $0x42b00000
DATA expc<>+0x18c(SB)/4, $0x42b00000
DATA expc<>+0x190(SB)/4, $0x42b00000
DATA expc<>+0x194(SB)/4, $0x42b00000
DATA expc<>+0x198(SB)/4, $0x42b00000
DATA expc<>+0x19c(SB)/4, $0x42b00000
DATA expc<>+0x1a0(SB)/4, $0x0000007f
DATA expc<>+0x1a4(SB)/4, $0x0000007f
DATA expc<>+0x1a8(SB)/4, $0x0000007f
DATA expc<>+0x1ac(SB)/4, $0x0000007f
DATA expc<>+0x1b0(SB)/4, $0x0000007f
DATA expc<>+0x1b4(SB)/4, $0x0000007f
DATA expc<>+0x1b8(SB)/4, $0x0000007f
DATA expc<>+0x1bc(SB)/4, $0x0000007f
GLOBL expc<>(SB), RODATA|NOPTR, $448


// func expShiftAVX2(dst, src []float32, shift float32, acc *[4]float64) int
//
// For i < len(src) rounded down to a multiple of 8, in blocks of 8:
// dst[i] = expf(src[i] - shift), bit for bit, and acc += the results (in
// float64, 4 lanes). It stops before the first block holding a value
// outside [-87, 88] (or NaN) and returns the number of elements done.
// Equivalent Go loop, per element:
//
//	x := src[i] - shift
//	n := x*log2e + magic - magic
//	r := x - n*c1 - n*c2
//	p := ((((p0*r+p1)*r+p2)*r+p3)*r+p4)*r + p5
//	p = p*r*r + r + 1
//	dst[i] = p * 2ⁿ
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), BX
	ANDQ $-8, BX
	MOVQ acc+56(FP), DX
	VBROADCASTSS shift+48(FP), Y15
	VMOVUPD (DX), Y13
	VXORPD Y14, Y14, Y14
	XORQ AX, AX

loop:
	CMPQ AX, BX
	JGE done
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS Y15, Y0, Y0
	VCMPPS $0x1d, expc<>+0x160(SB), Y0, Y1
	VCMPPS $0x12, expc<>+0x180(SB), Y0, Y2
	VANDPS Y1, Y2, Y1
	VMOVMSKPS Y1, R8
	CMPQ R8, $0xff
	JNE done
	VMULPS expc<>+0x0(SB), Y0, Y1
	VADDPS expc<>+0x20(SB), Y1, Y1
	VSUBPS expc<>+0x20(SB), Y1, Y1
	VMULPS expc<>+0x40(SB), Y1, Y2
	VSUBPS Y2, Y0, Y2
	VMULPS expc<>+0x60(SB), Y1, Y3
	VSUBPS Y3, Y2, Y2
	VMULPS expc<>+0x80(SB), Y2, Y3
	VADDPS expc<>+0xa0(SB), Y3, Y3
	VMULPS Y2, Y3, Y3
	VADDPS expc<>+0xc0(SB), Y3, Y3
	VMULPS Y2, Y3, Y3
	VADDPS expc<>+0xe0(SB), Y3, Y3
	VMULPS Y2, Y3, Y3
	VADDPS expc<>+0x100(SB), Y3, Y3
	VMULPS Y2, Y3, Y3
	VADDPS expc<>+0x120(SB), Y3, Y3
	VMULPS Y2, Y3, Y3
	VMULPS Y2, Y3, Y3
	VADDPS Y2, Y3, Y3
	VADDPS expc<>+0x140(SB), Y3, Y3
	VCVTTPS2DQ Y1, Y4
	VPADDD expc<>+0x1a0(SB), Y4, Y4
	VPSLLD $23, Y4, Y4
	VMULPS Y4, Y3, Y3
	VMOVUPS Y3, (DI)(AX*4)
	VCVTPS2PD X3, Y5
	VEXTRACTF128 $1, Y3, X6
	VCVTPS2PD X6, Y6
	VADDPD Y5, Y13, Y13
	VADDPD Y6, Y14, Y14
	ADDQ $8, AX
	JMP loop

done:
	VADDPD Y14, Y13, Y13
	VMOVUPD Y13, (DX)
	VZEROUPPER
	MOVQ AX, ret+64(FP)
	RET
