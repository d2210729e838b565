package cuda

import (
	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.ActivationBackend = (*Backend)(nil)

// elems returns the number of elements of o's shape.
func elems(o tensor.Operand) int {
	n := 1
	for _, s := range o.Shape {
		n *= s
	}
	return n
}

// activationDense returns the device addresses of the dense operands ops
// (named by names), all of the first operand's number of elements, and
// that number.
func (be *Backend) activationDense(op string, names []string, ops ...tensor.Operand) ([]driver.DevicePtr, int) {
	n := elems(ops[0])
	ptrs := make([]driver.DevicePtr, len(ops))
	for i, o := range ops {
		ptrs[i] = be.dense(op, names[i], o, n)
	}
	return ptrs, n
}

// ReLU sets y = max(x, 0) (activation.cu's relu_f32: the CPU's bits).
func (be *Backend) ReLU(y, x tensor.Operand) {
	const op = "ReLU"
	p, n := be.activationDense(op, []string{"y", "x"}, y, x)
	if n == 0 {
		return
	}
	be.queued(op, kc.ReluF32(be.g, be.grid(int64(n)), p[0], p[1], int64(n)))
}

// AddReLU sets y = max(a + b, 0), the sum rounded to float32
// (activation.cu's add_relu_f32: the CPU's bits).
func (be *Backend) AddReLU(y, a, b tensor.Operand) {
	const op = "AddReLU"
	p, n := be.activationDense(op, []string{"y", "a", "b"}, y, a, b)
	if n == 0 {
		return
	}
	be.queued(op, kc.AddReluF32(be.g, be.grid(int64(n)), p[0], p[1], p[2], int64(n)))
}

// ReLUBack sets (adds, when acc) dx = dy where y > 0, else 0
// (activation.cu's relu_back_f32, with kernels/vecmath's masks: the CPU's
// bits).
func (be *Backend) ReLUBack(dx, dy, y tensor.Operand, acc bool) {
	const op = "ReLUBack"
	p, n := be.activationDense(op, []string{"dx", "dy", "y"}, dx, dy, y)
	if n == 0 {
		return
	}
	be.queued(op, kc.ReluBackF32(be.g, be.grid(int64(n)), p[0], p[1], p[2], int64(n), b2i(acc)))
}
