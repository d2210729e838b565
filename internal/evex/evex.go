// Package evex encodes the AVX-512 instructions the Go assembler has no
// mnemonic for, as BYTE directives for the kernel generators
// (kernels/gemm/gen_kernels.go, kernels/conv/gen_kernels.go).
package evex

import (
	"bytes"
	"fmt"
)

// DPBF16PS returns VDPBF16PS zmm(dst), zmm(src1), zmm(src2) (AVX512_BF16,
// 512-bit, no mask): for each float32 lane i, dst[i] += src1.bf16[2i] *
// src2.bf16[2i] + src1.bf16[2i+1] * src2.bf16[2i+1], as Go assembler
// BYTE directives. Registers are numbered 0 to 31.
func DPBF16PS(dst, src1, src2 int) string {
	for _, r := range []int{dst, src1, src2} {
		if r < 0 || r > 31 {
			panic(fmt.Sprintf("evex.DPBF16PS: register %d, expected 0 to 31", r))
		}
	}
	inv := func(reg, bit int) int { return 1 ^ (reg>>bit)&1 }                        // EVEX stores register bits inverted
	p0 := inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | 0b10 // R X B R' 0 0 mm(0F38)
	p1 := (^src1&15)<<3 | 1<<2 | 0b10                                                // W0 vvvv 1 pp(F3)
	p2 := 0b10<<5 | inv(src1, 4)<<3                                                  // z0 L'L(512) b0 V' aaa(0)
	modrm := 0xc0 | (dst&7)<<3 | src2&7
	return byteDirectives(0x62, p0, p1, p2, 0x52, modrm)
}

// byteDirectives writes bs as "BYTE $0x62; BYTE $0x..." for the Go assembler.
func byteDirectives(bs ...int) string {
	var w bytes.Buffer
	for i, b := range bs {
		if i > 0 {
			w.WriteString("; ")
		}
		fmt.Fprintf(&w, "BYTE $0x%02x", b)
	}
	return w.String()
}
