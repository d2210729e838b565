package autograd

import "github.com/duel-ssl/duel/tensor"

// Sum returns the sum of x along axis (negative counts from the end);
// keepDim keeps the reduced axis with size 1.
//
//	y = Σₖ x[…,k,…],  ∂L/∂x[…,k,…] = g[…]
func Sum(tp *Tape, x *Var, axis int, keepDim bool) *Var {
	ax := normAxis("Sum", axis, x.Value.NDim())
	return tp.Record(tensor.Sum(x.Value, ax, keepDim), func(out *Var) {
		AccumulateGradOwned(x, spreadAxis(out.Grad, x.Shape(), ax, 1))
	}, x)
}

// Mean returns the mean of x along axis; keepDim keeps the reduced axis.
//
//	y = (1/n) Σₖ x[…,k,…],  ∂L/∂x[…,k,…] = g[…] / n
func Mean(tp *Tape, x *Var, axis int, keepDim bool) *Var {
	ax := normAxis("Mean", axis, x.Value.NDim())
	return tp.Record(tensor.Mean(x.Value, ax, keepDim), func(out *Var) {
		AccumulateGradOwned(x, spreadAxis(out.Grad, x.Shape(), ax, 1/float32(x.Value.Dim(ax))))
	}, x)
}

// SumAll returns the sum of every element of x as a 0-d value.
//
//	y = Σᵢ xᵢ,  ∂L/∂xᵢ = g
func SumAll(tp *Tape, x *Var) *Var {
	y := tensor.Scalar(float32(tensor.SumAll(x.Value)))
	return tp.Record(y, func(out *Var) {
		AccumulateGradOwned(x, tensor.Full(out.Grad.Item(), x.Shape()...))
	}, x)
}

// MeanAll returns the mean of every element of x as a 0-d value.
//
//	y = (1/n) Σᵢ xᵢ,  ∂L/∂xᵢ = g / n
func MeanAll(tp *Tape, x *Var) *Var {
	y := tensor.Scalar(float32(tensor.MeanAll(x.Value)))
	return tp.Record(y, func(out *Var) {
		n := float32(x.Value.Numel())
		AccumulateGradOwned(x, tensor.Full(out.Grad.Item()/n, x.Shape()...))
	}, x)
}

// Max returns the maximum of x along axis; keepDim keeps the reduced axis.
// The gradient flows to the first maximal element only.
//
//	y = maxₖ x[…,k,…],  ∂L/∂x[…,k,…] = g[…]·[k = argmaxₖ x[…,k,…]]
func Max(tp *Tape, x *Var, axis int, keepDim bool) *Var {
	ax := normAxis("Max", axis, x.Value.NDim())
	return tp.Record(tensor.Max(x.Value, ax, keepDim), func(out *Var) {
		idx := tensor.ArgMax(x.Value, ax)
		_, n, inner := splitAxis(x.Shape(), ax)
		g := out.Grad.Data()
		dx, d := newLike(x)
		for r, k := range idx {
			o, j := r/inner, r%inner
			d[(o*n+k)*inner+j] = g[r]
		}
		AccumulateGradOwned(x, dx)
	}, x)
}

// spreadAxis returns scale·g broadcast along axis to shape, where g holds
// shape without axis (or with it of size 1).
func spreadAxis(g *tensor.Tensor, shape []int, axis int, scale float32) *tensor.Tensor {
	outer, n, inner := splitAxis(shape, axis)
	gd := g.Contiguous().Data()
	dst := tensor.New(shape...)
	d := dst.Data()
	for o := range outer {
		src := gd[o*inner : (o+1)*inner]
		for k := range n {
			row := d[(o*n+k)*inner : (o*n+k+1)*inner]
			for j, v := range src {
				row[j] = scale * v
			}
		}
	}
	return dst
}
