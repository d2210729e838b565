// Package a64 encodes the arm64 instructions that Go's assembler lacks,
// for the generators of the NEON kernels (kernels/gemm/gen_neon.go), which
// write them as WORD directives.
package a64

// FMLAElem encodes FMLA Vd.4S, Vn.4S, Vm.S[idx]: single precision, 128
// bits, Vd += Vn * lane idx of Vm. The fields are 0 1 0 01111 1 0 L M Rm
// 0001 H 0 Rn Rd, with the lane H:L and the element's register M:Rm (any
// of V0-V31 in single precision). It panics on a register outside 0-31 or
// a lane outside 0-3: a generator's bug.
func FMLAElem(d, n, m, idx int) uint32 {
	for _, r := range []int{d, n, m} {
		if r < 0 || r > 31 {
			panic("a64: register out of range")
		}
	}
	if idx < 0 || idx > 3 {
		panic("a64: lane out of range")
	}
	h, l := uint32(idx>>1&1), uint32(idx&1)
	return 0x4F801000 | l<<21 | uint32(m>>4&1)<<20 | uint32(m&15)<<16 | h<<11 | uint32(n)<<5 | uint32(d)
}
