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
	y := scalarOn(x.Value.Device(), float32(tensor.SumAll(x.Value)))
	return tp.Record(y, func(out *Var) {
		AccumulateGradOwned(x, fullOn(x.Value.Device(), out.Grad.Item(), x.Shape()))
	}, x)
}

// MeanAll returns the mean of every element of x as a 0-d value.
//
//	y = (1/n) Σᵢ xᵢ,  ∂L/∂xᵢ = g / n
func MeanAll(tp *Tape, x *Var) *Var {
	y := scalarOn(x.Value.Device(), float32(tensor.MeanAll(x.Value)))
	return tp.Record(y, func(out *Var) {
		n := float32(x.Value.Numel())
		AccumulateGradOwned(x, fullOn(x.Value.Device(), out.Grad.Item()/n, x.Shape()))
	}, x)
}

// scalarOn returns a 0-d tensor holding v on dev (a value computed on the
// host, copied in).
func scalarOn(dev tensor.Device, v float32) *tensor.Tensor {
	y := tensor.ZerosOn(dev)
	y.Fill(v)
	return y
}

// fullOn returns a contiguous tensor of the given shape filled with v on dev.
func fullOn(dev tensor.Device, v float32, shape []int) *tensor.Tensor {
	y := tensor.ZerosOn(dev, shape...)
	y.Fill(v)
	return y
}

// Max returns the maximum of x along axis; keepDim keeps the reduced axis.
// The gradient flows to the first maximal element only.
//
//	y = maxₖ x[…,k,…],  ∂L/∂x[…,k,…] = g[…]·[k = argmaxₖ x[…,k,…]]
func Max(tp *Tape, x *Var, axis int, keepDim bool) *Var {
	ax := normAxis("Max", axis, x.Value.NDim())
	return tp.Record(tensor.Max(x.Value, ax, keepDim), func(out *Var) {
		idx := tensor.ArgMax(x.Value, ax)
		dx := tensor.ZerosOn(x.Value.Device(), x.Shape()...)
		putAlong(dx, out.Grad.Contiguous(), ax, idx)
		AccumulateGradOwned(x, dx)
	}, x)
}

// spreadAxis returns scale·g broadcast along axis to shape, where g holds
// shape without axis (or with it of size 1), as a new contiguous tensor on
// g's device.
func spreadAxis(g *tensor.Tensor, shape []int, axis int, scale float32) *tensor.Tensor {
	keep := append([]int(nil), shape...)
	keep[axis] = 1
	return tensor.MulScalar(g.Contiguous().Reshape(keep...).Expand(shape...), scale)
}
