package memory

import "reflect"

// variant is one implementation of a kernel (F a scoreFunc, blendFunc or
// transposeFunc; nil: the Go loop), named for tests and benchmarks. The
// lists (scoreVariants, blendVariants, transposeVariants) are in
// kernels_amd64_test.go and kernels_noasm_test.go.
type variant[F any] struct {
	name string
	kern F
}

// selected returns the name of the variant of vs that kern is ("go" for
// nil), or "unlisted".
func selected[F any](kern F, vs []variant[F]) string {
	p := reflect.ValueOf(kern).Pointer()
	for _, v := range vs {
		if reflect.ValueOf(v.kern).Pointer() == p {
			return v.name
		}
	}
	return "unlisted"
}
