package tensor

import "fmt"

// Reshape returns a tensor with the same elements in a new shape. One
// dimension may be -1 and is inferred. The result is a view when the tensor
// is contiguous and a copy otherwise.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	shape = cloneInts(shape)
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			panic(fmt.Sprintf("tensor.Reshape: bad shape %v", shape))
		default:
			known *= d
		}
	}
	n := t.Numel()
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			panic(fmt.Sprintf("tensor.Reshape: cannot infer -1 in %v for %d elements", shape, n))
		}
		shape[infer] = n / known
	} else if known != n {
		panic(fmt.Sprintf("tensor.Reshape: shape %v has %d elements, tensor %v has %d", shape, known, t.shape, n))
	}
	src := t
	if !t.IsContiguous() {
		src = t.Contiguous()
	}
	return &Tensor{shape: shape, strides: contiguousStrides(shape), offset: src.offset, data: src.data, handle: src.handle, device: src.device}
}

// Permute returns a view with the axes reordered: result axis i is axis axes[i].
func (t *Tensor) Permute(axes ...int) *Tensor {
	if len(axes) != len(t.shape) {
		panic(fmt.Sprintf("tensor.Permute: %d axes for shape %v", len(axes), t.shape))
	}
	seen := make([]bool, len(axes))
	shape := make([]int, len(axes))
	strides := make([]int, len(axes))
	for i, a := range axes {
		a = t.axis("Permute", a)
		if seen[a] {
			panic(fmt.Sprintf("tensor.Permute: repeated axis in %v", axes))
		}
		seen[a] = true
		shape[i], strides[i] = t.shape[a], t.strides[a]
	}
	return &Tensor{shape: shape, strides: strides, offset: t.offset, data: t.data, handle: t.handle, device: t.device}
}

// Transpose returns a view with axes a and b swapped.
func (t *Tensor) Transpose(a, b int) *Tensor {
	axes := make([]int, len(t.shape))
	for i := range axes {
		axes[i] = i
	}
	a, b = t.axis("Transpose", a), t.axis("Transpose", b)
	axes[a], axes[b] = axes[b], axes[a]
	return t.Permute(axes...)
}

// T returns the transpose of a 2-d tensor (a view).
func (t *Tensor) T() *Tensor {
	if len(t.shape) != 2 {
		panic(fmt.Sprintf("tensor.T: shape %v is not 2-d", t.shape))
	}
	return t.Transpose(0, 1)
}

// Slice returns a view of the elements start <= i < end along axis.
func (t *Tensor) Slice(axis, start, end int) *Tensor {
	axis = t.axis("Slice", axis)
	if start < 0 || end < start || end > t.shape[axis] {
		panic(fmt.Sprintf("tensor.Slice: range [%d,%d) out of bounds for axis %d of shape %v", start, end, axis, t.shape))
	}
	shape := cloneInts(t.shape)
	shape[axis] = end - start
	off := t.offset
	if end > start {
		off += start * t.strides[axis]
	}
	return &Tensor{shape: shape, strides: cloneInts(t.strides), offset: off, data: t.data, handle: t.handle, device: t.device}
}

// Contiguous returns t itself when it is contiguous and a dense copy otherwise.
func (t *Tensor) Contiguous() *Tensor {
	if t.IsContiguous() {
		return t
	}
	return t.Clone()
}

// Clone returns a contiguous copy of t.
func (t *Tensor) Clone() *Tensor {
	be := backendOf("Clone", t)
	out := empty(be, t.device, t.shape)
	be.Unary(OpCopy, out.operand(), t.operand(), 0)
	return out
}

// forEachOffset calls f with the storage offset of every element in row-major order.
func forEachOffset(shape, strides []int, offset int, f func(off int)) {
	n := numel(shape)
	if n == 0 {
		return
	}
	nd := len(shape)
	if nd == 0 {
		f(offset)
		return
	}
	idx := make([]int, nd)
	off := offset
	last := nd - 1
	for {
		for j := 0; j < shape[last]; j++ {
			f(off + j*strides[last])
		}
		d := last - 1
		for ; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < shape[d] {
				break
			}
			off -= idx[d] * strides[d]
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// Unsqueeze returns a view with a new axis of size 1 inserted at position
// axis (0 <= axis <= NDim; negative counts from the end of the result).
func (t *Tensor) Unsqueeze(axis int) *Tensor {
	nd := len(t.shape)
	if axis < 0 {
		axis += nd + 1
	}
	if axis < 0 || axis > nd {
		panic(fmt.Sprintf("tensor.Unsqueeze: axis %d out of range for shape %v", axis, t.shape))
	}
	stride := 1
	if axis < nd {
		stride = t.strides[axis] * t.shape[axis]
	}
	shape := append(append(append(make([]int, 0, nd+1), t.shape[:axis]...), 1), t.shape[axis:]...)
	strides := append(append(append(make([]int, 0, nd+1), t.strides[:axis]...), stride), t.strides[axis:]...)
	return &Tensor{shape: shape, strides: strides, offset: t.offset, data: t.data, handle: t.handle, device: t.device}
}

// Squeeze returns a view without the given axis, which must have size 1.
func (t *Tensor) Squeeze(axis int) *Tensor {
	axis = t.axis("Squeeze", axis)
	if t.shape[axis] != 1 {
		panic(fmt.Sprintf("tensor.Squeeze: axis %d of shape %v has size %d, want 1", axis, t.shape, t.shape[axis]))
	}
	shape := append(cloneInts(t.shape[:axis]), t.shape[axis+1:]...)
	strides := append(cloneInts(t.strides[:axis]), t.strides[axis+1:]...)
	return &Tensor{shape: shape, strides: strides, offset: t.offset, data: t.data, handle: t.handle, device: t.device}
}
