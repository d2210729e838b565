package nn

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// BatchNorm normalises each channel (axis 1) of an (N, C, ...) input,
// PyTorch's BatchNorm1d (N, C) or (N, C, L) and BatchNorm2d (N, C, H, W).
//
// In training mode it uses the batch statistics (biased variance) and
// updates the running statistics with PyTorch's momentum rule, the running
// variance taking the unbiased batch variance. In evaluation mode it uses
// the running statistics.
//
// With Splits > 1 it is a split ("ghost") BatchNorm, as in MoCo's
// single-machine SplitBatchNorm: in training the batch is cut into Splits
// equal groups of consecutive samples, each normalised with its own
// statistics, and the running statistics move towards the mean of the
// groups' statistics. Evaluation is unchanged.
type BatchNorm struct {
	Channels int
	Eps      float64
	Momentum float64
	Splits   int

	Weight, Bias                      *autograd.Var
	RunningMean, RunningVar, NumBatch *Buffer

	training bool
}

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
	shape := x.Value.Shape()
	if len(shape) < 2 || shape[1] != bn.Channels {
		panic(fmt.Sprintf("nn.BatchNorm(%d): input of shape %v, expected (N, %d, ...)", bn.Channels, shape, bn.Channels))
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
	ng := n / splits // samples per group
	if bn.training && ng*s <= 1 {
		panic(fmt.Sprintf("nn.BatchNorm: expected more than 1 value per channel when training, got input of shape %v", shape))
	}
	xd := data(x)
	y := tensor.New(shape...)
	yd := y.Data()
	gamma, betaV := bn.Weight.Value.Data(), bn.Bias.Value.Data()
	// mean and inverse standard deviation per (group, channel).
	mean := make([]float32, splits*c)
	invstd := make([]float32, splits*c)
	if bn.training {
		bn.batchStats(xd, mean, invstd, splits, ng, c, s)
	} else {
		rm, rv := bn.RunningMean.Tensor.Data(), bn.RunningVar.Tensor.Data()
		for ch := range c {
			mean[ch] = rm[ch]
			invstd[ch] = float32(1 / math.Sqrt(float64(rv[ch])+bn.Eps))
		}
	}
	bnApply(xd, yd, mean, invstd, gamma, betaV, splits, ng, c, s)
	return tp.Record(y, func(out *autograd.Var) {
		bnBackward(x, bn.Weight, bn.Bias, xd, gradOf(out), mean, invstd, splits, ng, c, s, bn.training)
	}, x, bn.Weight, bn.Bias)
}

// batchStats computes per (group, channel) mean and 1/sqrt(var+eps) with the
// biased variance, and updates the running statistics.
func (bn *BatchNorm) batchStats(xd, mean, invstd []float32, splits, ng, c, s int) {
	cnt := float64(ng * s)
	rm, rv := bn.RunningMean.Tensor.Data(), bn.RunningVar.Tensor.Data()
	m := bn.Momentum
	bmean := make([]float64, c)
	bvar := make([]float64, c)
	parallelFor(c, workers(len(xd)), func(lo, hi int) {
		for g := range splits {
			for ch := lo; ch < hi; ch++ {
				// Two passes in float64: the mean, then the squared deviations.
				var sum float64
				for i := g * ng; i < (g+1)*ng; i++ {
					row := xd[(i*c+ch)*s : (i*c+ch+1)*s]
					var rs float32
					for _, v := range row {
						rs += v
					}
					sum += float64(rs)
				}
				mu := sum / cnt
				var sq float64
				for i := g * ng; i < (g+1)*ng; i++ {
					row := xd[(i*c+ch)*s : (i*c+ch+1)*s]
					m32 := float32(mu)
					var rs float32
					for _, v := range row {
						d := v - m32
						rs += d * d
					}
					sq += float64(rs)
				}
				v := sq / cnt
				mean[g*c+ch] = float32(mu)
				invstd[g*c+ch] = float32(1 / math.Sqrt(v+bn.Eps))
				bmean[ch] += mu / float64(splits)
				bvar[ch] += v * cnt / (cnt - 1) / float64(splits)
			}
		}
	})
	for ch := range c {
		rm[ch] = float32((1-m)*float64(rm[ch]) + m*bmean[ch])
		rv[ch] = float32((1-m)*float64(rv[ch]) + m*bvar[ch])
	}
	bn.NumBatch.Tensor.Data()[0]++
}

// bnApply writes y = (x - mean) * invstd * gamma + beta.
func bnApply(xd, yd, mean, invstd, gamma, beta []float32, splits, ng, c, s int) {
	n := splits * ng
	parallelFor(n*c, workers(len(xd)), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			i, ch := r/c, r%c
			k := (i/ng)*c + ch
			a := invstd[k] * gamma[ch]
			b := beta[ch] - mean[k]*a
			src, dst := xd[r*s:(r+1)*s], yd[r*s:(r+1)*s]
			for j, v := range src {
				dst[j] = v*a + b
			}
		}
	})
}

// bnBackward adds the gradients of x, gamma and beta given dy.
func bnBackward(x, w, b *autograd.Var, xd, dy, mean, invstd []float32, splits, ng, c, s int, training bool) {
	gamma := w.Value.Data()
	// Per (group, channel): sum(dy) and sum(dy * xhat).
	sdy := make([]float64, splits*c)
	sdyx := make([]float64, splits*c)
	parallelFor(c, workers(len(xd)), func(lo, hi int) {
		for g := range splits {
			for ch := lo; ch < hi; ch++ {
				k := g*c + ch
				mu := mean[k]
				var a, bb float64
				for i := g * ng; i < (g+1)*ng; i++ {
					off := (i*c + ch) * s
					xr, gr := xd[off:off+s], dy[off:off+s]
					var ra, rb float32
					for j, gv := range gr {
						ra += gv
						rb += gv * (xr[j] - mu)
					}
					a += float64(ra)
					bb += float64(rb)
				}
				sdy[k] = a
				sdyx[k] = bb * float64(invstd[k])
			}
		}
	})
	if dw, acc := gradSlot(w); dw != nil {
		for ch := range c {
			var t float64
			for g := range splits {
				t += sdyx[g*c+ch]
			}
			if !acc {
				dw[ch] = 0
			}
			dw[ch] += float32(t)
		}
	}
	if db, acc := gradSlot(b); db != nil {
		for ch := range c {
			var t float64
			for g := range splits {
				t += sdy[g*c+ch]
			}
			if !acc {
				db[ch] = 0
			}
			db[ch] += float32(t)
		}
	}
	dx, acc := gradSlot(x)
	if dx == nil {
		return
	}
	n := splits * ng
	cnt := float32(ng * s)
	parallelFor(n*c, workers(len(xd)), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			i, ch := r/c, r%c
			k := (i/ng)*c + ch
			is := invstd[k]
			scale := gamma[ch] * is
			off := r * s
			xr, gr, dr := xd[off:off+s], dy[off:off+s], dx[off:off+s]
			if !training {
				// Running statistics are constants: dx = dy * gamma * invstd.
				for j, gv := range gr {
					v := gv * scale
					if acc {
						v += dr[j]
					}
					dr[j] = v
				}
				continue
			}
			// dx = gamma*invstd * (dy - mean(dy) - xhat * mean(dy*xhat)).
			mdy := float32(sdy[k]) / cnt
			mdyx := float32(sdyx[k]) / cnt
			mu := mean[k]
			for j, gv := range gr {
				xh := (xr[j] - mu) * is
				v := scale * (gv - mdy - xh*mdyx)
				if acc {
					v += dr[j]
				}
				dr[j] = v
			}
		}
	})
}
