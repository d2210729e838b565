package tensor

import (
	"fmt"
	"slices"
)

// Concat joins tensors along axis. All must have the same shape except
// along axis, and live on the same device.
func Concat(axis int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		panic("tensor.Concat: no tensors")
	}
	axis = ts[0].axis("Concat", axis)
	shape := cloneInts(ts[0].shape)
	total := 0
	for _, t := range ts {
		if len(t.shape) != len(shape) {
			panic(fmt.Sprintf("tensor.Concat: shapes %v and %v differ in rank", ts[0].shape, t.shape))
		}
		for i := range shape {
			if i != axis && t.shape[i] != shape[i] {
				panic(fmt.Sprintf("tensor.Concat: shapes %v and %v differ outside axis %d", ts[0].shape, t.shape, axis))
			}
		}
		total += t.shape[axis]
	}
	shape[axis] = total
	be := sameBackend("Concat", ts...)
	out := empty(be, ts[0].device, shape)
	at := 0
	for _, t := range ts {
		n := t.shape[axis]
		be.Unary(OpCopy, out.Slice(axis, at, at+n).operand(), t.operand(), 0)
		at += n
	}
	return out
}

// Stack joins tensors of one shape along a new axis (0 <= axis <= rank;
// negative counts from the end of the result's axes).
func Stack(axis int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		panic("tensor.Stack: no tensors")
	}
	nd := len(ts[0].shape)
	if axis < 0 {
		axis += nd + 1
	}
	if axis < 0 || axis > nd {
		panic(fmt.Sprintf("tensor.Stack: axis %d out of range for %d dimensions", axis, nd))
	}
	us := make([]*Tensor, len(ts))
	for i, t := range ts {
		if !slices.Equal(t.shape, ts[0].shape) {
			panic(fmt.Sprintf("tensor.Stack: shapes %v and %v differ", ts[0].shape, t.shape))
		}
		shape := make([]int, 0, nd+1)
		strides := make([]int, 0, nd+1)
		shape = append(append(append(shape, t.shape[:axis]...), 1), t.shape[axis:]...)
		strides = append(append(append(strides, t.strides[:axis]...), 0), t.strides[axis:]...)
		us[i] = &Tensor{shape: shape, strides: strides, offset: t.offset, data: t.data, handle: t.handle, device: t.device}
	}
	return Concat(axis, us...)
}
