//go:build !amd64 || noasm

package memory

// A pure-Go build has no assembly blend.
const blendAsmOK = false

// blendAsm is not available without assembly.
func blendAsm(dst, row, src []int32, base int, idx, tick []int32, after int32) {
	panic("memory: no assembly blend")
}

// prefetch does nothing without assembly.
func prefetch(v []int32) {}
