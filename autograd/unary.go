package autograd

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// Neg returns -x.
//
//	y = -x,  ∂L/∂x = -g
func Neg(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Neg(x.Value), func(out *Var) {
		AccumulateGradOwned(x, tensor.Neg(out.Grad))
	}, x)
}

// AddScalar returns x + s.
//
//	y = x + s,  ∂L/∂x = g
func AddScalar(tp *Tape, x *Var, s float32) *Var {
	return tp.Record(tensor.AddScalar(x.Value, s), func(out *Var) {
		// out.Grad is dropped after this closure: x may take it.
		AccumulateGradOwned(x, out.Grad)
	}, x)
}

// MulScalar returns s·x.
//
//	y = s·x,  ∂L/∂x = s·g
func MulScalar(tp *Tape, x *Var, s float32) *Var {
	return tp.Record(tensor.MulScalar(x.Value, s), func(out *Var) {
		AccumulateGradOwned(x, tensor.MulScalar(out.Grad, s))
	}, x)
}

// PowScalar returns x raised to the power p elementwise.
//
//	y = xᵖ,  ∂L/∂x = p·xᵖ⁻¹·g
func PowScalar(tp *Tape, x *Var, p float32) *Var {
	return tp.Record(tensor.PowScalar(x.Value, p), func(out *Var) {
		unaryGrad(x, tensor.OpPowScalar, out.Grad, x.Value, p)
	}, x)
}

// Square returns x² elementwise.
//
//	y = x²,  ∂L/∂x = 2x·g
func Square(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Square(x.Value), func(out *Var) {
		unaryGrad(x, tensor.OpSquare, out.Grad, x.Value, 0)
	}, x)
}

// Abs returns |x| elementwise.
//
//	y = |x|,  ∂L/∂x = sign(x)·g  (0 at x = 0)
func Abs(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Abs(x.Value), func(out *Var) {
		unaryGrad(x, tensor.OpAbs, out.Grad, x.Value, 0)
	}, x)
}

// Exp returns eˣ elementwise.
//
//	y = eˣ,  ∂L/∂x = y·g
func Exp(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Exp(x.Value), func(out *Var) {
		unaryGrad(x, tensor.OpExp, out.Grad, out.Value, 0)
	}, x)
}

// Log returns the natural logarithm ln x elementwise.
//
//	y = ln x,  ∂L/∂x = g / x
func Log(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Log(x.Value), func(out *Var) {
		unaryGrad(x, tensor.OpLog, out.Grad, x.Value, 0)
	}, x)
}

// Sqrt returns √x elementwise.
//
//	y = √x,  ∂L/∂x = g / (2y)
func Sqrt(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Sqrt(x.Value), func(out *Var) {
		unaryGrad(x, tensor.OpSqrt, out.Grad, out.Value, 0)
	}, x)
}

// unaryGrad adds the gradient of the elementwise op (parameter p) into x,
// from g, the output's gradient, and in, x or the output as
// tensor.UnaryGradBackend says for op, on in's device: in one pass where
// the backend has the capability (the CPU's loops in kernels/elemgrad),
// otherwise composed of core backend operations (unaryGradFallback).
func unaryGrad(x *Var, op tensor.UnaryOp, g, in *tensor.Tensor, p float32) {
	if !x.RequiresGrad {
		return
	}
	g, in = g.Contiguous(), in.Contiguous()
	ub, ok := in.Backend().(tensor.UnaryGradBackend)
	if !ok {
		AccumulateGradOwned(x, unaryGradFallback(op, g, in, p))
		return
	}
	dx := tensor.ZerosOn(in.Device(), in.Shape()...)
	ub.UnaryGrad(op, dx.Operand(), g.Operand(), in.Operand(), p)
	AccumulateGradOwned(x, dx)
}

// unaryGradFallback composes op's backward pass of core backend operations,
// each rounded to float32. It gives the capability's bits for Square, Exp,
// Log, Sqrt, Sigmoid and Tanh (the same float32 operations in the same
// order, on a platform that fuses no multiply-add), and for finite values
// of Abs and ReLU (a sign mask times g; at x = 0 the mask gives 0·g, whose
// sign is g's, where the loop writes +0; NaN inputs or infinite g give NaN
// where the loop writes 0). PowScalar's p·x^(p-1) is rounded twice in
// float32 (x^(p-1), then ·p) where the capability rounds the float64
// product once: within a few float32 ulps.
func unaryGradFallback(op tensor.UnaryOp, g, in *tensor.Tensor, p float32) *tensor.Tensor {
	switch op {
	case tensor.OpSquare:
		return tensor.Mul(tensor.MulScalar(in, 2), g)
	case tensor.OpAbs:
		return tensor.Mul(tensor.Sign(in), g)
	case tensor.OpExp:
		return tensor.Mul(in, g)
	case tensor.OpLog:
		return tensor.Div(g, in)
	case tensor.OpSqrt:
		return tensor.Div(g, tensor.MulScalar(in, 2))
	case tensor.OpPowScalar:
		return tensor.Mul(tensor.MulScalar(tensor.PowScalar(in, p-1), p), g)
	case tensor.OpRelu:
		return tensor.Mul(tensor.Sign(in), g)
	case tensor.OpTanh:
		return tensor.Mul(tensor.AddScalar(tensor.Neg(tensor.Square(in)), 1), g)
	case tensor.OpSigmoid:
		return tensor.Mul(tensor.Mul(in, tensor.AddScalar(tensor.Neg(in), 1)), g)
	}
	panic(fmt.Sprintf("autograd: no backward pass for %v", op))
}
