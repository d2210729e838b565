package cuda

import (
	"fmt"

	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.UnaryGradBackend = (*Backend)(nil)

// UnaryGrad sets dst to the gradient of op's input from g and in (x for
// Square, Abs, Log and PowScalar; y for Exp, Sqrt, ReLU, Tanh and Sigmoid)
// in one pass (unarygrad.cu's unary_grad_f32: kernels/elemgrad's float32
// arithmetic, the CPU's bits; PowScalar's factor in double rounded once).
func (be *Backend) UnaryGrad(op tensor.UnaryOp, dst, g, in tensor.Operand, p float32) {
	const name = "UnaryGrad"
	switch op {
	case tensor.OpSquare, tensor.OpAbs, tensor.OpExp, tensor.OpLog, tensor.OpSqrt, tensor.OpPowScalar,
		tensor.OpRelu, tensor.OpTanh, tensor.OpSigmoid:
	default:
		panic(fmt.Sprintf("cuda: Backend.UnaryGrad of %v", op))
	}
	ptr, n := be.activationDense(name, []string{"dst", "g", "in"}, dst, g, in)
	if n == 0 {
		return
	}
	be.queued(name, kc.UnaryGradF32(be.g, be.grid(int64(n)), int32(op), p, ptr[0], ptr[1], ptr[2], int64(n)))
}
