//go:build !amd64 || noasm

package igemm

// A pure-Go build has no assembly kernel.
const accelerated = false

// dots is never called without the assembly kernel.
func dots(kp int, a []int16, lda int, b []int16, c []int32, ldc int) {
	panic("igemm: no assembly kernel")
}
