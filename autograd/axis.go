package autograd

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// addInto adds src into dst elementwise; both have the same shape and
// either may be a strided view. The backend does the work (in parallel for
// large tensors, on the tensors' device).
func addInto(dst, src *tensor.Tensor) { dst.AddScaledInPlace(1, src) }

// normAxis resolves a possibly negative axis for an n-dimensional value.
func normAxis(op string, axis, n int) int {
	a := axis
	if a < 0 {
		a += n
	}
	if a < 0 || a >= n {
		panic(fmt.Sprintf("autograd.%s: axis %d out of range for %d dimensions", op, axis, n))
	}
	return a
}

// splitAxis returns the element counts before, along and after axis.
func splitAxis(shape []int, axis int) (outer, n, inner int) {
	outer, inner = 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	return outer, shape[axis], inner
}
