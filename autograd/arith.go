package autograd

import (
	"slices"

	"github.com/duel-ssl/duel/tensor"
)

// Add returns a + b with NumPy broadcasting.
//
//	y = a + b,  ∂L/∂a = sumTo(g, shape a),  ∂L/∂b = sumTo(g, shape b)
//
// where g = ∂L/∂y and sumTo sums over the broadcast dimensions.
func Add(tp *Tape, a, b *Var) *Var {
	return tp.Record(tensor.Add(a.Value, b.Value), func(out *Var) {
		// out.Grad can be given away once: to b, or to a when b needs none.
		accumulateReduced(a, out.Grad, !b.RequiresGrad)
		accumulateReduced(b, out.Grad, true)
	}, a, b)
}

// Sub returns a - b with NumPy broadcasting.
//
//	y = a - b,  ∂L/∂a = sumTo(g, shape a),  ∂L/∂b = -sumTo(g, shape b)
func Sub(tp *Tape, a, b *Var) *Var {
	return tp.Record(tensor.Sub(a.Value, b.Value), func(out *Var) {
		g := out.Grad
		if b.RequiresGrad {
			if slices.Equal(b.Shape(), g.Shape()) {
				AccumulateGradOwned(b, tensor.Neg(g))
			} else {
				AccumulateGradOwned(b, tensor.Neg(tensor.SumTo(g, b.Shape())))
			}
		}
		// b's gradient is computed: a may take out.Grad.
		accumulateReduced(a, g, true)
	}, a, b)
}

// Mul returns the elementwise product a ⊙ b with NumPy broadcasting.
//
//	y = a ⊙ b,  ∂L/∂a = sumTo(g ⊙ b, shape a),  ∂L/∂b = sumTo(g ⊙ a, shape b)
func Mul(tp *Tape, a, b *Var) *Var {
	return tp.Record(tensor.Mul(a.Value, b.Value), func(out *Var) {
		g := out.Grad
		if a.RequiresGrad {
			accumulateReduced(a, tensor.Mul(g, b.Value), true)
		}
		if b.RequiresGrad {
			accumulateReduced(b, tensor.Mul(g, a.Value), true)
		}
	}, a, b)
}

// Div returns the elementwise quotient a / b with NumPy broadcasting.
//
//	y = a / b,  ∂L/∂a = sumTo(g / b, shape a),  ∂L/∂b = -sumTo(g ⊙ y / b, shape b)
func Div(tp *Tape, a, b *Var) *Var {
	return tp.Record(tensor.Div(a.Value, b.Value), func(out *Var) {
		gb := tensor.Div(out.Grad, b.Value) // g / b, of y's shape
		if b.RequiresGrad {
			db := tensor.Mul(gb, out.Value)
			if !slices.Equal(b.Shape(), db.Shape()) {
				db = tensor.SumTo(db, b.Shape()).Contiguous()
			}
			db.ScaleInPlace(-1)
			AccumulateGradOwned(b, db)
		}
		accumulateReduced(a, gb, true)
	}, a, b)
}

// accumulateReduced adds t, a gradient of the broadcast result's shape,
// into v, summing over the dimensions along which v was broadcast. owned
// says whether t may be given away (see AccumulateGradOwned).
func accumulateReduced(v *Var, t *tensor.Tensor, owned bool) {
	if !v.RequiresGrad {
		return
	}
	if !slices.Equal(v.Shape(), t.Shape()) {
		r := tensor.SumTo(t, v.Shape())
		owned = owned || !sharesStorage(r, t)
		t = r
	}
	if owned {
		AccumulateGradOwned(v, t)
	} else {
		AccumulateGrad(v, t)
	}
}

// sharesStorage reports whether two tensors view the same storage.
func sharesStorage(a, b *tensor.Tensor) bool { return a.SharesStorage(b) }
