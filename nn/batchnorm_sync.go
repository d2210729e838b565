package nn

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// SyncFunc sums buf element-wise over the processes of a data-parallel
// group, in place, identically on every process (an MPI all-reduce).
// BatchNorm.Sync takes one; package nn knows nothing of the transport.
type SyncFunc func(buf []float32) error

// forwardSync is the training pass of a synchronised BatchNorm (Sync set,
// PyTorch's SyncBatchNorm): the statistics are those of the whole global
// batch, every process contributing its per-channel sums, count included,
// through one all-reduce. It is built from autograd operations plus the
// all-reduce of the sums, whose backward pass all-reduces their gradient
// (each process's loss reaches the global statistics through its own
// samples only, and the statistics' gradient is the sum of all of them),
// so the input gradient is that of one process normalising the whole
// batch. The variance is two-pass, as one process computes it: a first
// all-reduce gives the global mean, a second the sum of the squared
// deviations from it (E[x²] - E[x]² in float32 loses the variance when the
// mean is large against the spread; PyTorch's SyncBatchNorm, for the same
// reason, combines each process's mean and variance rather than raw sums).
// Splits are not used: a synchronised BatchNorm normalises the global
// batch as one group.
func (bn *BatchNorm) forwardSync(tp *autograd.Tape, x *autograd.Var, relu bool, res *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	n, c := shape[0], shape[1]
	s := x.Value.Numel() / max(n*c, 1)
	_, cm := densePlanes(x.Value)
	x3 := autograd.Reshape(tp, bn.arena.toLayoutOn(tp, x, false), n, c, s)
	channelSums := func(v *autograd.Var) *autograd.Var {
		return autograd.Sum(tp, autograd.Sum(tp, v, 2, true), 0, true)
	}
	mean, count := syncMean(tp, bn.Sync, channelSums(x3), n*s)
	dev := autograd.Sub(tp, x3, mean)
	variance, _ := syncMean(tp, bn.Sync, channelSums(autograd.Square(tp, dev)), n*s)
	invstd := autograd.PowScalar(tp, autograd.AddScalar(tp, variance, float32(bn.Eps)), -0.5)
	xhat := autograd.Mul(tp, dev, invstd)
	y := autograd.Add(tp, autograd.Mul(tp, xhat, autograd.Reshape(tp, bn.Weight, 1, c, 1)), autograd.Reshape(tp, bn.Bias, 1, c, 1))
	y = autograd.Reshape(tp, y, shape...)
	if res != nil {
		y = autograd.Add(tp, y, res)
	}
	if relu {
		y = autograd.ReLU(tp, y)
	}
	bn.updateRunning(mean.Value, variance.Value, count)
	return bn.arena.toLayoutOn(tp, y, cm)
}

// syncMean all-reduces the per-channel sums sum ((1, C, 1)) and this
// process's count of values per channel, and returns the sums divided by
// the global count, (1, C, 1), and that count. Its backward pass
// all-reduces the gradient: every process's loss reaches the global mean
// through its own samples.
func syncMean(tp *autograd.Tape, sync SyncFunc, sum *autograd.Var, local int) (*autograd.Var, float64) {
	c := sum.Value.Numel()
	dev := sum.Value.Device()
	buf := append(hostCopy(sum.Value), float32(local)) // exact up to 2^24 values per channel
	if err := sync(buf); err != nil {
		panic(fmt.Sprintf("nn.BatchNorm (synchronised): all-reduce of the batch statistics: %v", err))
	}
	count := float64(buf[c])
	inv := float32(1 / count)
	for i := range buf[:c] {
		buf[i] *= inv
	}
	out, err := tensor.FromSlice(buf[:c], 1, c, 1).To(dev)
	if err != nil {
		panic(fmt.Sprintf("nn.BatchNorm (synchronised): %v", err))
	}
	return tp.Record(out, func(o *autograd.Var) {
		g := append(hostCopy(o.Grad), 0)
		if err := sync(g); err != nil {
			panic(fmt.Sprintf("nn.BatchNorm (synchronised): all-reduce of the statistics' gradient: %v", err))
		}
		for i := range g {
			g[i] *= inv
		}
		t, err := tensor.FromSlice(g[:c], 1, c, 1).To(dev)
		if err != nil {
			panic(fmt.Sprintf("nn.BatchNorm (synchronised): %v", err))
		}
		autograd.AccumulateGradOwned(sum, t)
	}, sum), count
}

// updateRunning moves the running statistics towards the global batch's
// mean and (unbiased) variance, PyTorch's momentum rule, and counts the
// batch.
func (bn *BatchNorm) updateRunning(mean, variance *tensor.Tensor, count float64) {
	m, v := hostCopy(mean), hostCopy(variance)
	rm, rv := hostCopy(bn.RunningMean.Tensor), hostCopy(bn.RunningVar.Tensor)
	mom := float32(bn.Momentum)
	unbias := float32(count / max(count-1, 1))
	for i := range rm {
		rm[i] = (1-mom)*rm[i] + mom*m[i]
		rv[i] = (1-mom)*rv[i] + mom*v[i]*unbias
	}
	for _, p := range []struct {
		dst *tensor.Tensor
		src []float32
	}{{bn.RunningMean.Tensor, rm}, {bn.RunningVar.Tensor, rv}} {
		if p.dst.Device() == tensor.CPU {
			copy(p.dst.Data(), p.src)
			continue
		}
		d, err := tensor.FromSlice(p.src, p.dst.Shape()...).To(p.dst.Device())
		if err != nil {
			panic(fmt.Sprintf("nn.BatchNorm (synchronised): running statistics to %v: %v", p.dst.Device(), err))
		}
		tensor.CopyInto(p.dst, d)
	}
	nb := bn.NumBatch.Tensor
	nb.Backend().Unary(tensor.OpAddScalar, nb.Operand(), nb.Operand(), 1)
}

// hostCopy returns a host copy (or, on the CPU, the contiguous values) of t.
func hostCopy(t *tensor.Tensor) []float32 {
	h, err := t.To(tensor.CPU)
	if err != nil {
		panic(fmt.Sprintf("nn.BatchNorm (synchronised): copying %v to the host: %v", t.Shape(), err))
	}
	return append([]float32(nil), h.Contiguous().Data()...)
}
