package tensor

import (
	"fmt"
	"math"
	"slices"
)

// Sum returns the sums along axis (negative counts from the end). With
// keepDim the axis stays with size 1; otherwise it is removed.
func Sum(a *Tensor, axis int, keepDim bool) *Tensor {
	return reduceAxis("Sum", ReduceSum, a, axis, keepDim)
}

// Mean returns the means along axis (NaN for an empty axis).
func Mean(a *Tensor, axis int, keepDim bool) *Tensor {
	return reduceAxis("Mean", ReduceMean, a, axis, keepDim)
}

// Max returns the maxima along axis (-Inf for an empty axis).
func Max(a *Tensor, axis int, keepDim bool) *Tensor {
	return reduceAxis("Max", ReduceMax, a, axis, keepDim)
}

// Min returns the minima along axis (+Inf for an empty axis).
func Min(a *Tensor, axis int, keepDim bool) *Tensor {
	return reduceAxis("Min", ReduceMin, a, axis, keepDim)
}

func reduceAxis(name string, op ReduceOp, a *Tensor, axis int, keepDim bool) *Tensor {
	axis = a.axis(name, axis)
	keep := cloneInts(a.shape)
	keep[axis] = 1
	be := backendOf(name, a)
	out := empty(be, a.device, keep)
	be.Reduce(op, out.operand(), a.operand())
	if !keepDim {
		out.shape = append(keep[:axis:axis], keep[axis+1:]...)
		out.strides = contiguousStrides(out.shape)
	}
	return out
}

// ArgMax returns, for every line of a along axis, the index of its largest
// element (the first on ties), in row-major order over the other axes.
// It panics if the axis is empty and there are lines.
func ArgMax(a *Tensor, axis int) []int {
	axis = a.axis("ArgMax", axis)
	n := a.Numel()
	if a.shape[axis] == 0 {
		rest := 1
		for i, d := range a.shape {
			if i != axis {
				rest *= d
			}
		}
		if rest > 0 {
			panic(fmt.Sprintf("tensor.ArgMax: empty axis %d of shape %v", axis, a.shape))
		}
		return []int{}
	}
	out := make([]int, n/a.shape[axis])
	if len(out) > 0 {
		backendOf("ArgMax", a).ArgMax(out, a.operand(), axis)
	}
	return out
}

// SumAll returns the sum of all elements, accumulated in float64.
func SumAll(a *Tensor) float64 {
	if a.Numel() == 0 {
		return 0
	}
	if a.device == CPU || a.device == "" {
		if a.IsContiguous() {
			return sum64(a.data[a.offset : a.offset+a.Numel()])
		}
		shape, st := collapse(a.shape, a.strides)
		s := st[0][len(shape)-1]
		total := 0.0
		eachRow(shape, st, []int{a.offset}, func(o []int, m int) { total = reduceRow(ReduceSum, total, a.data, o[0], m, s) })
		return total
	}
	ones := make([]int, len(a.shape))
	for i := range ones {
		ones[i] = 1
	}
	be := backendOf("SumAll", a)
	out := empty(be, a.device, ones)
	be.Reduce(ReduceSum, out.operand(), a.operand())
	v := make([]float32, 1)
	be.CopyOut(v, out.operand().Buf, 0)
	return float64(v[0])
}

// MeanAll returns the mean of all elements (NaN for an empty tensor).
func MeanAll(a *Tensor) float64 {
	n := a.Numel()
	if n == 0 {
		return math.NaN()
	}
	return SumAll(a) / float64(n)
}

// SumTo sums a over the dimensions that broadcasting stretched so that the
// result has the given shape, which must broadcast to a's shape. It is the
// gradient of broadcasting. It returns a itself when a already has the
// shape.
func SumTo(a *Tensor, shape []int) *Tensor {
	if slices.Equal(a.shape, shape) {
		return a
	}
	lead := len(a.shape) - len(shape)
	if _, ok := broadcastStrides(shape, contiguousStrides(shape), a.shape); !ok {
		panic(fmt.Sprintf("tensor.SumTo: shape %v does not broadcast to %v", shape, a.shape))
	}
	keep := make([]int, len(a.shape))
	for i := range keep {
		keep[i] = 1
		if i >= lead {
			keep[i] = shape[i-lead]
		}
	}
	be := backendOf("SumTo", a)
	out := empty(be, a.device, keep)
	be.Reduce(ReduceSum, out.operand(), a.operand())
	out.shape = cloneInts(shape)
	out.strides = contiguousStrides(shape)
	return out
}
