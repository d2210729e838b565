package nn

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// BatchNorm normalises each channel (axis 1) of an (N, C, ...) input,
// PyTorch's BatchNorm1d (N, C) or (N, C, L) and BatchNorm2d (N, C, H, W).
//
// In training mode it uses the batch statistics (biased variance) and
// updates the running statistics with PyTorch's momentum rule, the running
// variance taking the unbiased batch variance. In evaluation mode it uses
// the running statistics. The output keeps the input's memory layout. The
// passes, running statistics included, are its backend's
// tensor.BatchNormBackend (kernels/batchnorm's on the CPU).
//
// With Splits > 1 it is a split ("ghost") BatchNorm, exactly MoCo's
// single-machine SplitBatchNorm: in training the batch is cut into Splits
// equal groups, sample i going to group i mod Splits (MoCo's
// view(-1, C*Splits, H, W)), each normalised with its own statistics, and
// the running statistics move towards the mean of the groups' statistics.
// Evaluation is unchanged.
type BatchNorm struct {
	Channels int
	Eps      float64
	Momentum float64
	Splits   int
	// Sync, when set, makes the layer a synchronised BatchNorm in
	// training: the batch statistics are those of every process of a
	// data-parallel group together (forwardSync). Splits is then unused.
	Sync SyncFunc

	Weight, Bias                      *autograd.Var
	RunningMean, RunningVar, NumBatch *Buffer

	training bool
	arena    *Arena
}

// SetArena makes the layer allocate from a.
func (bn *BatchNorm) SetArena(a *Arena) { bn.arena = a }

// NewBatchNorm returns a BatchNorm over c channels with PyTorch's defaults:
// eps 1e-5, momentum 0.1, weight 1, bias 0, running mean 0 and variance 1,
// training mode.
func NewBatchNorm(c int) *BatchNorm {
	return &BatchNorm{
		Channels:    c,
		Eps:         1e-5,
		Momentum:    0.1,
		Splits:      1,
		Weight:      autograd.Param(tensor.Ones(c), "weight"),
		Bias:        autograd.Param(tensor.New(c), "bias"),
		RunningMean: &Buffer{Tensor: tensor.New(c)},
		RunningVar:  &Buffer{Tensor: tensor.Ones(c)},
		NumBatch:    &Buffer{Tensor: tensor.New(), Int64: true},
		training:    true,
	}
}

// NewBatchNorm1d is NewBatchNorm for (N, C) or (N, C, L) inputs.
func NewBatchNorm1d(c int) *BatchNorm { return NewBatchNorm(c) }

// NewBatchNorm2d is NewBatchNorm for (N, C, H, W) inputs.
func NewBatchNorm2d(c int) *BatchNorm { return NewBatchNorm(c) }

// Members returns weight, bias, running_mean, running_var and
// num_batches_tracked.
func (bn *BatchNorm) Members() []Member {
	return []Member{
		{Name: "weight", Param: bn.Weight},
		{Name: "bias", Param: bn.Bias},
		{Name: "running_mean", Buffer: bn.RunningMean},
		{Name: "running_var", Buffer: bn.RunningVar},
		{Name: "num_batches_tracked", Buffer: bn.NumBatch},
	}
}

// SetTraining selects batch (true) or running (false) statistics.
func (bn *BatchNorm) SetTraining(training bool) { bn.training = training }

// Training reports the mode.
func (bn *BatchNorm) Training() bool { return bn.training }

// Forward normalises x of shape (N, C, ...).
func (bn *BatchNorm) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	return bn.forward(tp, x, false, nil)
}

// ForwardReLU returns max(bn(x), 0) as one operation: the pair
// BatchNorm-ReLU of a ResNet without the intermediate tensor.
func (bn *BatchNorm) ForwardReLU(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	return bn.forward(tp, x, true, nil)
}

// ForwardAddReLU returns max(bn(x) + res, 0) as one operation, the end of a
// residual block; res has x's shape.
func (bn *BatchNorm) ForwardAddReLU(tp *autograd.Tape, x, res *autograd.Var) *autograd.Var {
	if !slices.Equal(x.Value.Shape(), res.Value.Shape()) {
		panic(fmt.Sprintf("nn.BatchNorm.ForwardAddReLU: input %v and residual %v differ in shape", x.Value.Shape(), res.Value.Shape()))
	}
	return bn.forward(tp, x, true, res)
}

// forward computes bn(x), then adds res when non-nil, then applies relu.
func (bn *BatchNorm) forward(tp *autograd.Tape, x *autograd.Var, relu bool, res *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) < 2 || shape[1] != bn.Channels {
		panic(fmt.Sprintf("nn.BatchNorm(%d): input of shape %v, expected (N, %d, ...)", bn.Channels, shape, bn.Channels))
	}
	if bn.Sync != nil && bn.training {
		return bn.forwardSync(tp, x, relu, res)
	}
	n, c := shape[0], shape[1]
	s := x.Value.Numel() / max(n*c, 1)
	splits := max(bn.Splits, 1)
	if !bn.training {
		splits = 1
	}
	if n%splits != 0 {
		panic(fmt.Sprintf("nn.BatchNorm: batch of %d samples cannot be split into %d equal groups", n, splits))
	}
	if bn.training && n/splits*s <= 1 {
		panic(fmt.Sprintf("nn.BatchNorm: expected more than 1 value per channel when training, got input of shape %v", shape))
	}
	xv, cm := densePlanes(x.Value)
	bb := batchNormOf(xv)
	dev := xv.Device()
	g := tensor.BatchNormGeom{N: n, C: c, S: s, Splits: splits, ChannelMajor: cm}
	y := bn.arena.act(dev, cm, shape...)
	// mean and inverse standard deviation per (group, channel), the
	// statistics the backward pass needs: from the arena (both passes
	// write every element; on a GPU, no memset or allocation a layer).
	mean := bn.arena.act(dev, false, splits*c)
	invstd := bn.arena.act(dev, false, splits*c)
	act := func(t *tensor.Tensor) tensor.Operand { return memOp(t, n*c*s) }
	vec := func(t *tensor.Tensor) tensor.Operand { return memOp(t.Contiguous(), t.Numel()) }
	args := tensor.BatchNormArgs{
		Y: act(y), X: act(xv),
		Gamma: vec(bn.Weight.Value), Beta: vec(bn.Bias.Value),
		RunningMean: memOp(bn.RunningMean.Tensor, c), RunningVar: memOp(bn.RunningVar.Tensor, c),
		Mean: vec(mean), InvStd: vec(invstd),
		Eps: bn.Eps, Momentum: bn.Momentum, ReLU: relu,
	}
	inputs := []*autograd.Var{x, bn.Weight, bn.Bias}
	if res != nil {
		res = bn.arena.toLayoutOn(tp, res, cm)
		args.Res = act(res.Value)
		inputs = append(inputs, res)
	}
	if bn.training {
		args.NumBatches = memOp(bn.NumBatch.Tensor, 1) // num_batches_tracked += 1, in the same pass
		bb.BatchNormTrain(g, args)
	} else {
		bb.BatchNormEval(g, args)
	}
	training := bn.training
	return tp.Record(y, func(out *autograd.Var) {
		defer bn.arena.release(out.Grad)
		a := tensor.BatchNormGrad{X: args.X, DY: act(bn.arena.actGrad(out)), Mean: args.Mean, InvStd: args.InvStd,
			Gamma: vec(bn.Weight.Value), Training: training}
		if relu {
			a.Y = args.Y
		}
		if res != nil {
			if dres, acc := bn.arena.actGradSlot(res); dres != nil {
				a.DRes, a.AccDRes = act(dres), acc
			}
		}
		if dx, acc := bn.arena.actGradSlot(x); dx != nil {
			a.DX, a.AccDX = act(dx), acc
		}
		// The parameters' gradients never come from the arena.
		if dg, acc := (*Arena)(nil).gradTensor(bn.Weight); dg != nil {
			a.DGamma, a.AccDGamma = memOp(dg, c), acc
		}
		if db, acc := (*Arena)(nil).gradTensor(bn.Bias); db != nil {
			a.DBeta, a.AccDBeta = memOp(db, c), acc
		}
		bb.BatchNormBackward(g, a)
	}, inputs...)
}

// batchNormOf returns the tensor.BatchNormBackend of t's backend. BatchNorm
// has no composition of core operations: a backend without the capability
// cannot run it, and batchNormOf panics naming it.
func batchNormOf(t *tensor.Tensor) tensor.BatchNormBackend {
	b := t.Backend()
	bb, ok := b.(tensor.BatchNormBackend)
	if !ok {
		panic(fmt.Sprintf("nn.BatchNorm: backend %q has no tensor.BatchNormBackend (the normalisation needs it)", b.Name()))
	}
	return bb
}
