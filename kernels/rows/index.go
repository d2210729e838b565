package rows

// SplitAxis returns the element counts before, along and after axis of a
// shape.
func SplitAxis(shape []int, axis int) (outer, n, inner int) {
	outer, inner = 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	return outer, shape[axis], inner
}

// TakeAlong sets dst[r] = src[o, idx[r], j] for every lane r = o*inner + j
// of a contiguous src of shape along axis (dst holds the lanes in
// row-major order).
func TakeAlong(shape []int, axis int, dst, src []float32, idx []int) {
	_, n, inner := SplitAxis(shape, axis)
	for r, k := range idx {
		o, j := r/inner, r%inner
		dst[r] = src[(o*n+k)*inner+j]
	}
}

// PutAlong sets dst[o, idx[r], j] = src[r] for every lane r = o*inner + j
// of a contiguous dst of shape along axis, leaving its other elements.
func PutAlong(shape []int, axis int, dst, src []float32, idx []int) {
	_, n, inner := SplitAxis(shape, axis)
	for r, k := range idx {
		o, j := r/inner, r%inner
		dst[(o*n+k)*inner+j] = src[r]
	}
}
