package tensor

import (
	"fmt"

	"github.com/duel-ssl/duel/kernels/elemgrad"
)

// UnaryGradBackend is an optional capability of a Backend, discovered by
// type assertion as io.WriterTo is: the backward passes of the elementwise
// unary operations in one pass each. A backend without it still
// differentiates: package autograd then composes each backward pass from
// core Backend operations (multiply, divide, sign, scalar ops), in float32.
//
// UnaryGrad sets dst to the gradient of op's input from g, the gradient of
// its output, and in, which is op's input x for OpSquare (2x·g), OpAbs
// (sign(x)·g, 0 at 0), OpLog (g/x) and OpPowScalar (p·x^(p-1)·g), and op's
// output y for OpExp (y·g), OpSqrt (g/(2y)), OpRelu (g where y > 0, else
// 0), OpTanh ((1-y²)·g) and OpSigmoid (y(1-y)·g). The three operands are
// contiguous views of the same shape; dst does not overlap g or in. The
// CPU backend computes each with the loop of package kernels/elemgrad
// (PowScalar's factor in float64, rounded once).
type UnaryGradBackend interface {
	// UnaryGrad sets dst to the gradient of op's input (see above).
	UnaryGrad(op UnaryOp, dst, g, in Operand, p float32)
}

var _ UnaryGradBackend = cpu{}

func (cpu) UnaryGrad(op UnaryOp, dst, g, in Operand, p float32) {
	var k elemgrad.Kernel
	switch op {
	case OpSquare:
		k = elemgrad.Square
	case OpAbs:
		k = elemgrad.Abs
	case OpExp:
		k = elemgrad.Exp
	case OpLog:
		k = elemgrad.Log
	case OpSqrt:
		k = elemgrad.Sqrt
	case OpPowScalar:
		k = elemgrad.Pow(p)
	case OpRelu:
		k = elemgrad.ReLU
	case OpTanh:
		k = elemgrad.Tanh
	case OpSigmoid:
		k = elemgrad.Sigmoid
	default:
		panic(fmt.Sprintf("tensor: cpu backend: UnaryGrad of %v", op))
	}
	elemgrad.Run(k, flat("UnaryGrad", dst), flat("UnaryGrad", g), flat("UnaryGrad", in))
}
