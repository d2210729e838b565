//go:build (!amd64 && !arm64) || noasm

package gemm

// detect lists the kernels of a pure-Go build: only the generic one,
// without its blocking (see withDerived).
func detect() []*kernel { return []*kernel{genericKernel} }
