package autograd

import "github.com/duel-ssl/duel/tensor"

// ReLU returns max(x, 0) elementwise.
//
//	y = max(x, 0),  ∂L/∂x = g·[x > 0]
func ReLU(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Relu(x.Value), func(out *Var) {
		unaryGrad(x, tensor.OpRelu, out.Grad, out.Value, 0)
	}, x)
}

// Tanh returns the hyperbolic tangent elementwise.
//
//	y = tanh x,  ∂L/∂x = (1 - y²)·g
func Tanh(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Tanh(x.Value), func(out *Var) {
		unaryGrad(x, tensor.OpTanh, out.Grad, out.Value, 0)
	}, x)
}

// Sigmoid returns the logistic function elementwise.
//
//	y = 1 / (1 + e⁻ˣ),  ∂L/∂x = y(1 - y)·g
func Sigmoid(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Sigmoid(x.Value), func(out *Var) {
		unaryGrad(x, tensor.OpSigmoid, out.Grad, out.Value, 0)
	}, x)
}
