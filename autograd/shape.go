package autograd

import "github.com/duel-ssl/duel/tensor"

// Reshape returns x with a new shape (one dimension may be -1); a view when
// x is contiguous.
//
//	y = reshape(x),  ∂L/∂x = reshape(g, shape x)
func Reshape(tp *Tape, x *Var, shape ...int) *Var {
	return tp.Record(x.Value.Reshape(shape...), func(out *Var) {
		AccumulateGradOwned(x, out.Grad.Reshape(x.Shape()...))
	}, x)
}

// Transpose returns a view of x with axes i and j swapped.
//
//	y = xᵀ⁽ⁱʲ⁾,  ∂L/∂x = gᵀ⁽ⁱʲ⁾
func Transpose(tp *Tape, x *Var, i, j int) *Var {
	return tp.Record(x.Value.Transpose(i, j), func(out *Var) {
		AccumulateGradOwned(x, out.Grad.Transpose(i, j))
	}, x)
}

// Permute returns a view of x with its axes reordered: axis k of the result
// is axis axes[k] of x.
//
//	y = permute(x, p),  ∂L/∂x = permute(g, p⁻¹)
func Permute(tp *Tape, x *Var, axes ...int) *Var {
	y := x.Value.Permute(axes...)
	inv := make([]int, len(axes))
	for k, a := range axes {
		inv[normAxis("Permute", a, len(axes))] = k
	}
	return tp.Record(y, func(out *Var) {
		AccumulateGradOwned(x, out.Grad.Permute(inv...))
	}, x)
}

// Slice returns a view of the elements start <= k < end of x along axis.
//
//	y = x[…, start:end, …],  ∂L/∂x[…, start:end, …] = g, 0 elsewhere
func Slice(tp *Tape, x *Var, axis, start, end int) *Var {
	return tp.Record(x.Value.Slice(axis, start, end), func(out *Var) {
		addInto(gradBuffer(x).Slice(axis, start, end), out.Grad)
	}, x)
}

// Concat joins xs along axis; all other dimensions must match.
//
//	y = [x₁, …, xₙ] along axis,  ∂L/∂xᵢ = g[…, offᵢ:offᵢ+nᵢ, …]
func Concat(tp *Tape, axis int, xs ...*Var) *Var {
	if len(xs) == 0 {
		panic("autograd.Concat: no inputs")
	}
	vals := make([]*tensor.Tensor, len(xs))
	for i, x := range xs {
		vals[i] = x.Value
	}
	ax := normAxis("Concat", axis, xs[0].Value.NDim())
	return tp.Record(tensor.Concat(ax, vals...), func(out *Var) {
		off := 0
		for _, x := range xs {
			n := x.Value.Dim(ax)
			// Slices of out.Grad are disjoint: each input may own its own.
			AccumulateGradOwned(x, out.Grad.Slice(ax, off, off+n))
			off += n
		}
	}, xs...)
}

// Detach returns a variable sharing x's value through which no gradient
// flows (stop-gradient); it is x.Detach.
func Detach(x *Var) *Var { return x.Detach() }
