package tensor

import "fmt"

// BroadcastShapes returns the shape two operands broadcast to under NumPy's
// rules, or an error naming both shapes.
func BroadcastShapes(a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := 1; i <= n; i++ {
		da, db := 1, 1
		if i <= len(a) {
			da = a[len(a)-i]
		}
		if i <= len(b) {
			db = b[len(b)-i]
		}
		switch {
		case da == db || db == 1:
			out[n-i] = da
		case da == 1:
			out[n-i] = db
		default:
			return nil, fmt.Errorf("tensor: shapes %v and %v do not broadcast (dimension %d: %d vs %d)", a, b, n-i, da, db)
		}
	}
	return out, nil
}

// Expand returns a view of t broadcast to shape, with 0 strides on the
// stretched dimensions. Leading dimensions may be added; -1 keeps a
// dimension's size. It panics if t does not broadcast to shape.
func (t *Tensor) Expand(shape ...int) *Tensor {
	shape = cloneInts(shape)
	lead := len(shape) - len(t.shape)
	if lead < 0 {
		panic(fmt.Sprintf("tensor.Expand: cannot expand shape %v to %v", t.shape, shape))
	}
	for i := range shape {
		if shape[i] == -1 {
			if i < lead {
				panic(fmt.Sprintf("tensor.Expand: -1 in new leading dimension of %v", shape))
			}
			shape[i] = t.shape[i-lead]
		}
	}
	strides, ok := broadcastStrides(t.shape, t.strides, shape)
	if !ok {
		panic(fmt.Sprintf("tensor.Expand: cannot expand shape %v to %v", t.shape, shape))
	}
	return &Tensor{shape: shape, strides: strides, offset: t.offset, data: t.data, handle: t.handle, device: t.device}
}

// broadcastStrides returns strides reading a tensor of the given shape and
// strides as the larger shape to, or false if it does not broadcast.
func broadcastStrides(shape, strides, to []int) ([]int, bool) {
	lead := len(to) - len(shape)
	if lead < 0 {
		return nil, false
	}
	out := make([]int, len(to))
	for i := range to {
		if to[i] < 0 {
			return nil, false
		}
		if i < lead {
			continue
		}
		d := shape[i-lead]
		switch {
		case d == to[i]:
			out[i] = strides[i-lead]
		case d == 1:
			out[i] = 0
		default:
			return nil, false
		}
	}
	return out, true
}

// expandedOperand describes t read as the broadcast shape.
func (t *Tensor) expandedOperand(op string, shape []int) Operand {
	strides, ok := broadcastStrides(t.shape, t.strides, shape)
	if !ok {
		panic(fmt.Sprintf("tensor.%s: shape %v does not broadcast to %v", op, t.shape, shape))
	}
	o := t.operand()
	o.Shape, o.Strides = shape, strides
	return o
}
