package autograd

import (
	"math"

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
		pp := float64(p)
		elementwiseGrad(x, out.Grad, x.Value, func(d, g, x []float32) {
			for i, v := range x {
				d[i] = float32(pp*math.Pow(float64(v), pp-1)) * g[i]
			}
		})
	}, x)
}

// Square returns x² elementwise.
//
//	y = x²,  ∂L/∂x = 2x·g
func Square(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Square(x.Value), func(out *Var) {
		elementwiseGrad(x, out.Grad, x.Value, func(d, g, x []float32) {
			for i, v := range x {
				d[i] = 2 * v * g[i]
			}
		})
	}, x)
}

// Abs returns |x| elementwise.
//
//	y = |x|,  ∂L/∂x = sign(x)·g  (0 at x = 0)
func Abs(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Abs(x.Value), func(out *Var) {
		elementwiseGrad(x, out.Grad, x.Value, func(d, g, x []float32) {
			for i, v := range x {
				switch {
				case v > 0:
					d[i] = g[i]
				case v < 0:
					d[i] = -g[i]
				}
			}
		})
	}, x)
}

// Exp returns eˣ elementwise.
//
//	y = eˣ,  ∂L/∂x = y·g
func Exp(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Exp(x.Value), func(out *Var) {
		elementwiseGrad(x, out.Grad, out.Value, func(d, g, y []float32) {
			for i, v := range y {
				d[i] = v * g[i]
			}
		})
	}, x)
}

// Log returns the natural logarithm ln x elementwise.
//
//	y = ln x,  ∂L/∂x = g / x
func Log(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Log(x.Value), func(out *Var) {
		elementwiseGrad(x, out.Grad, x.Value, func(d, g, x []float32) {
			for i, v := range x {
				d[i] = g[i] / v
			}
		})
	}, x)
}

// Sqrt returns √x elementwise.
//
//	y = √x,  ∂L/∂x = g / (2y)
func Sqrt(tp *Tape, x *Var) *Var {
	return tp.Record(tensor.Sqrt(x.Value), func(out *Var) {
		elementwiseGrad(x, out.Grad, out.Value, func(d, g, y []float32) {
			for i, v := range y {
				d[i] = g[i] / (2 * v)
			}
		})
	}, x)
}

// elementwiseGrad computes the gradient of an elementwise op on x and adds
// it into x: kernel fills d from g (the output's gradient) and in (x or the
// output, of x's shape), on chunks split across cores for large tensors.
// The slices given to kernel have equal lengths.
func elementwiseGrad(x *Var, g, in *tensor.Tensor, kernel func(d, g, in []float32)) {
	if !x.RequiresGrad {
		return
	}
	gd, id := g.Contiguous().Data(), in.Contiguous().Data()
	dx := tensor.New(x.Value.Shape()...)
	d := dx.Data()
	parallelFor(len(d), len(d), func(lo, hi int) {
		kernel(d[lo:hi], gd[lo:hi], id[lo:hi])
	})
	AccumulateGradOwned(x, dx)
}
