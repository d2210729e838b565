package dist

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// Gather is the data-parallel join of a per-rank result: x holds this
// rank's rows (ShardLen(n, ...) of them, any trailing shape) of a global
// batch of n rows, and the result holds all n rows in global order, on
// x's device, identical on every rank.
//
// Every rank then computes the same global loss from gathered values, so
// the gradient reaching the result is the same on every rank; the
// backward pass hands this rank the rows of its own samples. The
// parameters' gradients summed over the ranks (AllReduce) are then the
// gradient of the global loss, exactly as one process with the whole
// batch computes it. On a single rank Gather returns x itself.
func Gather(tp *autograd.Tape, c Comm, x *autograd.Var, n int) (*autograd.Var, error) {
	if c == nil || c.Size() == 1 {
		return x, nil
	}
	out, err := GatherTensor(c, x.Value, n)
	if err != nil {
		return nil, err
	}
	rank, size := c.Rank(), c.Size()
	rows := ShardRows(n, rank, size)
	return tp.Record(out, func(o *autograd.Var) {
		g, err := o.Grad.To(tensor.CPU)
		if err != nil {
			panic(fmt.Sprintf("dist.Gather backward: copying the gradient to the host: %v", err))
		}
		width := g.Numel() / max(n, 1)
		local := TakeRows(g.Contiguous().Data(), rows, width)
		shape := append([]int{len(rows)}, x.Value.Shape()[1:]...)
		lt, err := tensor.FromSlice(local, shape...).To(x.Value.Device())
		if err != nil {
			panic(fmt.Sprintf("dist.Gather backward: copying the gradient to %v: %v", x.Value.Device(), err))
		}
		autograd.AccumulateGradOwned(x, lt)
	}, x), nil
}

// GatherTensor is Gather of a constant: the n global rows of every rank's
// shard t, in global order, on t's device.
func GatherTensor(c Comm, t *tensor.Tensor, n int) (*tensor.Tensor, error) {
	if c == nil || c.Size() == 1 {
		return t, nil
	}
	h, err := t.To(tensor.CPU)
	if err != nil {
		return nil, fmt.Errorf("dist: gathering %v: copying to the host: %w", t.Shape(), err)
	}
	shape := append([]int{n}, t.Shape()[1:]...)
	width := 1
	for _, d := range shape[1:] {
		width *= d
	}
	all, err := GatherRowsHost(c, h.Contiguous().Data(), n, width)
	if err != nil {
		return nil, fmt.Errorf("dist: gathering %v: %w", t.Shape(), err)
	}
	out, err := tensor.FromSlice(all, shape...).To(t.Device())
	if err != nil {
		return nil, fmt.Errorf("dist: gathering %v: copying to %v: %w", t.Shape(), t.Device(), err)
	}
	return out, nil
}

// ShardTensor returns this rank's rows of the global batch t (n rows), on
// t's device: t itself on a single rank.
func ShardTensor(c Comm, t *tensor.Tensor) *tensor.Tensor {
	if c == nil || c.Size() == 1 {
		return t
	}
	n := t.Dim(0)
	rows := ShardRows(n, c.Rank(), c.Size())
	parts := make([]*tensor.Tensor, len(rows))
	for k, i := range rows {
		parts[k] = t.Slice(0, i, i+1)
	}
	if len(parts) == 0 {
		shape := append([]int{0}, t.Shape()[1:]...)
		return tensor.ZerosOn(t.Device(), shape...)
	}
	return tensor.Concat(0, parts...)
}
