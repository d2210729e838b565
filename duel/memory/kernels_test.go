package memory

// variant is one implementation of a kernel (F a scoreFunc, blendFunc or
// transposeFunc; nil: the Go loop), named for tests and benchmarks. The
// lists (scoreVariants, blendVariants, transposeVariants) are in
// kernels_amd64_test.go and kernels_noasm_test.go.
type variant[F any] struct {
	name string
	kern F
}
