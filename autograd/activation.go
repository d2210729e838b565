package autograd

import "github.com/duel-ssl/duel/tensor"

// ReLU returns max(x, 0) elementwise.
//
//	y = max(x, 0),  ∂L/∂x = g·[x > 0]
func ReLU(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Relu(x.Value), func(out *Var) {
		elementwiseGrad(x, out.Grad, out.Value, func(d, g, y []float32) {
			for i, v := range y {
				if v > 0 {
					d[i] = g[i]
				}
			}
		})
	}, x)
}

// Tanh returns the hyperbolic tangent elementwise.
//
//	y = tanh x,  ∂L/∂x = (1 - y²)·g
func Tanh(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Tanh(x.Value), func(out *Var) {
		elementwiseGrad(x, out.Grad, out.Value, func(d, g, y []float32) {
			for i, v := range y {
				d[i] = (1 - v*v) * g[i]
			}
		})
	}, x)
}

// Sigmoid returns the logistic function elementwise.
//
//	y = 1 / (1 + e⁻ˣ),  ∂L/∂x = y(1 - y)·g
func Sigmoid(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Sigmoid(x.Value), func(out *Var) {
		elementwiseGrad(x, out.Grad, out.Value, func(d, g, y []float32) {
			for i, v := range y {
				d[i] = v * (1 - v) * g[i]
			}
		})
	}, x)
}
