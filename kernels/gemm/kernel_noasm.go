//go:build !amd64 || noasm

package gemm

// detect lists the kernels of a pure-Go build: only the generic one.
func detect() []*kernel { return []*kernel{genericKernel} }
