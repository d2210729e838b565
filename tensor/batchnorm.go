package tensor

import (
	"math"

	"github.com/duel-ssl/duel/kernels/batchnorm"
)

// BatchNormGeom describes the activation of a batch normalisation
// (kernels/batchnorm.Geom): N samples of C channels of S elements each,
// normalised in Splits groups (1 for a plain BatchNorm; sample i goes to
// group i mod Splits), stored sample-major (NCHW) or, when ChannelMajor,
// channel-major (CNHW).
type BatchNormGeom = batchnorm.Geom

// BatchNormArgs are the operands of BatchNormTrain and BatchNormEval.
// Every operand is dense on the backend's storage. X, Y and Res are
// activations of N·C·S elements in the layout of the BatchNormGeom; Res is
// the zero Operand without a residual. Gamma, Beta, RunningMean and
// RunningVar hold C elements. Mean and InvStd hold Splits·C elements
// (group grp, channel ch at grp·C+ch): the statistics the normalisation
// used, written by the pass for BatchNormBackward. NumBatches, for
// BatchNormTrain, is the zero Operand or one element (PyTorch's
// num_batches_tracked) that the pass increments by 1 (in float32: exact up
// to 2^24 batches).
type BatchNormArgs struct {
	Y, X, Res               Operand
	Gamma, Beta             Operand
	RunningMean, RunningVar Operand
	Mean, InvStd            Operand
	NumBatches              Operand // BatchNormTrain only
	Eps                     float64
	Momentum                float64 // BatchNormTrain only
	ReLU                    bool    // y = max(·, 0)
}

// BatchNormGrad are the operands of BatchNormBackward, dense on the
// backend's storage, activations in the layout of the BatchNormGeom. Y is
// the forward output when it went through the fused ReLU (dy counts only
// where y > 0), else the zero Operand. Mean and InvStd are those the
// forward pass wrote, Gamma the weight; Training selects batch statistics
// (false: the running statistics, constants of the pass). The gradients
// (of the input, of the residual, of the weight and of the bias) are set,
// or added into with their Acc flag; a zero Operand is not computed.
type BatchNormGrad struct {
	X, DY, Y                            Operand
	Mean, InvStd, Gamma                 Operand
	Training                            bool
	DX, DRes, DGamma, DBeta             Operand
	AccDX, AccDRes, AccDGamma, AccDBeta bool
}

// BatchNormBackend is an optional capability of a Backend: the passes of
// package nn's BatchNorm, y = (x - mean)·invstd·gamma + beta per channel
// (and group), plus an optional residual, through an optional ReLU. A
// backend without it cannot run package nn's BatchNorm, which then panics
// naming the backend and the capability. The CPU backend computes the
// passes with package kernels/batchnorm.
type BatchNormBackend interface {
	// BatchNormTrain normalises a.X with the batch statistics of each
	// group and channel (biased variance), writes them to a.Mean and
	// a.InvStd, and moves the running statistics towards the batch's by
	// PyTorch's momentum rule: running = (1-m)·running + m·batch, the
	// batch mean and unbiased variance averaged over the groups, in
	// float64.
	BatchNormTrain(g BatchNormGeom, a BatchNormArgs)
	// BatchNormEval normalises a.X with the running statistics (a single
	// group), writing a.Mean and a.InvStd = 1/√(running var + eps).
	BatchNormEval(g BatchNormGeom, a BatchNormArgs)
	// BatchNormBackward computes the gradients of a.
	BatchNormBackward(g BatchNormGeom, a BatchNormGrad)
}

var _ BatchNormBackend = cpu{}

func (cpu) BatchNormTrain(g BatchNormGeom, a BatchNormArgs) {
	const op = "BatchNormTrain"
	x, y, res := flat(op, a.X), flat(op, a.Y), flatOpt(op, a.Res)
	mean, invstd := flat(op, a.Mean), flat(op, a.InvStd)
	gamma, beta := flat(op, a.Gamma), flat(op, a.Beta)
	bmean, bvar := make([]float64, g.C), make([]float64, g.C)
	if g.ChannelMajor {
		batchnorm.StatsNormalize(g, a.Eps, x, y, res, mean, invstd, gamma, beta, bmean, bvar, a.ReLU)
	} else {
		batchnorm.Stats(g, a.Eps, x, mean, invstd, bmean, bvar)
		batchnorm.Normalize(g, x, y, res, mean, invstd, gamma, beta, a.ReLU)
	}
	rm, rv := flat(op, a.RunningMean), flat(op, a.RunningVar)
	m := a.Momentum
	for ch := range bmean {
		rm[ch] = float32((1-m)*float64(rm[ch]) + m*bmean[ch])
		rv[ch] = float32((1-m)*float64(rv[ch]) + m*bvar[ch])
	}
	if nb := flatOpt(op, a.NumBatches); nb != nil {
		nb[0]++
	}
}

func (cpu) BatchNormEval(g BatchNormGeom, a BatchNormArgs) {
	const op = "BatchNormEval"
	mean, invstd := flat(op, a.Mean), flat(op, a.InvStd)
	rm, rv := flat(op, a.RunningMean), flat(op, a.RunningVar)
	for ch := range g.C {
		mean[ch] = rm[ch]
		invstd[ch] = float32(1 / math.Sqrt(float64(rv[ch])+a.Eps))
	}
	batchnorm.Normalize(g, flat(op, a.X), flat(op, a.Y), flatOpt(op, a.Res), mean, invstd,
		flat(op, a.Gamma), flat(op, a.Beta), a.ReLU)
}

func (cpu) BatchNormBackward(g BatchNormGeom, a BatchNormGrad) {
	const op = "BatchNormBackward"
	batchnorm.Backward(&kernelScratch, g, &batchnorm.Grad{
		X: flat(op, a.X), DY: flat(op, a.DY), Mask: flatOpt(op, a.Y),
		Mean: flat(op, a.Mean), InvStd: flat(op, a.InvStd), Gamma: flat(op, a.Gamma),
		Training: a.Training,
		DX:       flatOpt(op, a.DX), DRes: flatOpt(op, a.DRes), DGamma: flatOpt(op, a.DGamma), DBeta: flatOpt(op, a.DBeta),
		AccDX: a.AccDX, AccDRes: a.AccDRes, AccDGamma: a.AccDGamma, AccDBeta: a.AccDBeta,
	})
}
