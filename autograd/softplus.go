package autograd

import "github.com/duel-ssl/duel/tensor"

// Softplus returns ln(1 + eˣ) elementwise, computed as
// max(x, 0) + ln(1 + e^-|x|), which does not overflow for large x.
//
//	y = ln(1 + eˣ),  ∂L/∂x = σ(x)·g
func Softplus(tp *Tape, x *Var) *Var {
	v := x.Value
	e := tensor.Exp(tensor.Neg(tensor.Abs(v)))
	y := tensor.Add(tensor.Relu(v), tensor.Log(tensor.AddScalar(e, 1)))
	return tp.Record(y, func(out *Var) {
		AccumulateGradOwned(x, tensor.Mul(out.Grad, tensor.Sigmoid(v)))
	}, x)
}
