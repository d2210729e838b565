package tensor

import (
	"fmt"
	"slices"
)

// Add returns a + b, broadcasting.
func Add(a, b *Tensor) *Tensor { return binary("Add", OpAdd, a, b) }

// Sub returns a - b, broadcasting.
func Sub(a, b *Tensor) *Tensor { return binary("Sub", OpSub, a, b) }

// Mul returns a * b elementwise, broadcasting.
func Mul(a, b *Tensor) *Tensor { return binary("Mul", OpMul, a, b) }

// Div returns a / b elementwise, broadcasting.
func Div(a, b *Tensor) *Tensor { return binary("Div", OpDiv, a, b) }

// Maximum returns the elementwise maximum of a and b, broadcasting. NaN
// propagates.
func Maximum(a, b *Tensor) *Tensor { return binary("Maximum", OpMaximum, a, b) }

// Minimum returns the elementwise minimum of a and b, broadcasting. NaN
// propagates.
func Minimum(a, b *Tensor) *Tensor { return binary("Minimum", OpMinimum, a, b) }

// AddInto stores a + b into dst, which must have the broadcast shape.
func AddInto(dst, a, b *Tensor) { binaryInto("AddInto", OpAdd, dst, a, b) }

// SubInto stores a - b into dst, which must have the broadcast shape.
func SubInto(dst, a, b *Tensor) { binaryInto("SubInto", OpSub, dst, a, b) }

// MulInto stores a * b into dst, which must have the broadcast shape.
func MulInto(dst, a, b *Tensor) { binaryInto("MulInto", OpMul, dst, a, b) }

// DivInto stores a / b into dst, which must have the broadcast shape.
func DivInto(dst, a, b *Tensor) { binaryInto("DivInto", OpDiv, dst, a, b) }

func binary(name string, op BinaryOp, a, b *Tensor) *Tensor {
	be := sameBackend(name, a, b)
	if slices.Equal(a.shape, b.shape) {
		out := empty(be, a.device, a.shape)
		be.Binary(op, out.operand(), a.operand(), b.operand())
		return out
	}
	shape, err := BroadcastShapes(a.shape, b.shape)
	if err != nil {
		panic(fmt.Sprintf("tensor.%s: %v", name, err))
	}
	out := empty(be, a.device, shape)
	be.Binary(op, out.operand(), a.expandedOperand(name, shape), b.expandedOperand(name, shape))
	return out
}

// binaryInto writes op(a, b) into dst. dst may be a itself or b itself (in
// place) but must not otherwise overlap them.
func binaryInto(name string, op BinaryOp, dst, a, b *Tensor) {
	if slices.Equal(a.shape, b.shape) && slices.Equal(a.shape, dst.shape) {
		sameBackend(name, dst, a, b).Binary(op, dst.operand(), a.operand(), b.operand())
		return
	}
	shape, err := BroadcastShapes(a.shape, b.shape)
	if err != nil {
		panic(fmt.Sprintf("tensor.%s: %v", name, err))
	}
	if !slices.Equal(shape, dst.shape) {
		panic(fmt.Sprintf("tensor.%s: destination shape %v, want broadcast shape %v of %v and %v", name, dst.shape, shape, a.shape, b.shape))
	}
	be := sameBackend(name, dst, a, b)
	be.Binary(op, dst.operand(), a.expandedOperand(name, shape), b.expandedOperand(name, shape))
}

// sameBackend returns the backend of the tensors' device, panicking if
// they live on different devices.
func sameBackend(op string, ts ...*Tensor) Backend {
	for _, t := range ts[1:] {
		if t.device != ts[0].device {
			panic(fmt.Sprintf("tensor.%s: tensors on devices %q and %q", op, ts[0].device, t.device))
		}
	}
	return backendOf(op, ts[0])
}

// empty returns a contiguous zeroed tensor on dev allocated by be.
func empty(be Backend, dev Device, shape []int) *Tensor {
	if dev == CPU || dev == "" {
		return New(shape...)
	}
	n := checkShape("empty", shape)
	buf := be.Alloc(n)
	return &Tensor{shape: cloneInts(shape), strides: contiguousStrides(shape), data: buf.Host, handle: buf.Dev, device: dev}
}
