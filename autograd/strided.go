package autograd

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// addInto adds src into dst elementwise; both have the same shape and
// either may be a strided view.
func addInto(dst, src *tensor.Tensor) {
	if dst.IsContiguous() && src.IsContiguous() {
		d, s := dst.Data(), src.Data()
		for i := range d {
			d[i] += s[i]
		}
		return
	}
	ds, ss := dst.Storage(), src.Storage()
	forEachPair(dst.Shape(), dst.Strides(), dst.Offset(), src.Strides(), src.Offset(), func(i, j int) {
		ds[i] += ss[j]
	})
}

// forEachPair calls f with the storage offsets of the same element in two
// tensors of one shape, in row-major order.
func forEachPair(shape, sa []int, oa int, sb []int, ob int, f func(i, j int)) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n == 0 {
		return
	}
	nd := len(shape)
	if nd == 0 {
		f(oa, ob)
		return
	}
	idx := make([]int, nd)
	last := nd - 1
	for {
		for k := 0; k < shape[last]; k++ {
			f(oa+k*sa[last], ob+k*sb[last])
		}
		d := last - 1
		for ; d >= 0; d-- {
			idx[d]++
			oa += sa[d]
			ob += sb[d]
			if idx[d] < shape[d] {
				break
			}
			oa -= idx[d] * sa[d]
			ob -= idx[d] * sb[d]
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

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
