//go:build !amd64 || noasm

package cpu

// detect returns the zero Info: without CPUID (another architecture, or a
// noasm build) nothing is known and the kernels run their plain-Go code.
func detect() Info { return Info{} }
