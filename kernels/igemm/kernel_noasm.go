//go:build !amd64 || noasm

package igemm

// available lists the kernels of a pure-Go build: the Go one only.
var available = []kernel{kernGeneric}

// dots is never called without an assembly kernel.
func dots(kn kernel, kp int, a []int16, lda int, b []int16, c []int32, ldc int) {
	panic("igemm: no assembly kernel")
}
