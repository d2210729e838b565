package hostless

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// cpuCap returns the CPU backend as the capability T.
func cpuCap[T any]() T {
	c, ok := cpu().(T)
	if !ok {
		var zero T
		panic(fmt.Sprintf("hostless: the cpu backend has no %T", &zero))
	}
	return c
}

var _ tensor.UnaryGradBackend = Fused{}

// UnaryGrad runs the CPU's unary backward loop on the unwrapped handles.
func (Fused) UnaryGrad(op tensor.UnaryOp, dst, g, in tensor.Operand, p float32) {
	cpuCap[tensor.UnaryGradBackend]().UnaryGrad(op, unwrapOp("UnaryGrad", dst), unwrapOp("UnaryGrad", g), unwrapOp("UnaryGrad", in), p)
}

var _ tensor.IndexBackend = Fused{}

// TakeAlong runs the CPU's gather on the unwrapped handles.
func (Fused) TakeAlong(dst, src tensor.Operand, axis int, idx []int) {
	cpuCap[tensor.IndexBackend]().TakeAlong(unwrapOp("TakeAlong", dst), unwrapOp("TakeAlong", src), axis, idx)
}

// PutAlong runs the CPU's scatter on the unwrapped handles.
func (Fused) PutAlong(dst, src tensor.Operand, axis int, idx []int) {
	cpuCap[tensor.IndexBackend]().PutAlong(unwrapOp("PutAlong", dst), unwrapOp("PutAlong", src), axis, idx)
}
