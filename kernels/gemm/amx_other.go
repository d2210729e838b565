//go:build !amd64 || noasm

package gemm

// amxKernel is nil: the AMX tile kernel is amd64 assembly.
var amxKernel tileKernel

// amxUsable reports false: there is no AMX kernel in this build.
func amxUsable() bool { return false }

// tileAMX is not in this build; amxUsable is false, so it is never called.
func tileAMX(cfg *[64]byte, steps int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, load int) {
	panic("gemm: no AMX kernel in this build")
}
