package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/tensor"
)

// awayFromZero moves every element at least d away from 0 (ReLU's kink).
func awayFromZero(t *tensor.Tensor, d float32) *tensor.Tensor {
	for i, v := range t.Data() {
		if v >= 0 && v < d {
			t.Data()[i] = v + d
		} else if v < 0 && v > -d {
			t.Data()[i] = v - d
		}
	}
	return t
}

// spread returns a tensor of distinct values 0.05 apart in random order
// (no near-ties for max-pooling).
func spread(r *rand.Rand, shape ...int) *tensor.Tensor {
	t := tensor.New(shape...)
	d := t.Data()
	for i, j := range r.Perm(len(d)) {
		d[i] = 0.05 * float32(j-len(d)/2)
	}
	return t
}

// TestGradcheck checks every layer with the project's float64
// central-difference harness (autograd/gradcheck) on NCHW inputs;
// TestChannelMajorGrad covers the channel-major layout.
func TestGradcheck(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	bnTrain := NewBatchNorm2d(3)
	NormalInit(bnTrain.Weight.Value, 1, r)
	bnEval := NewBatchNorm2d(3)
	bnEval.SetTraining(false)
	UniformInit(bnEval.RunningMean.Tensor, 1, r)
	bn1d := NewBatchNorm1d(4)
	ghost := NewBatchNorm2d(3)
	ghost.Splits = 2
	synced := NewBatchNorm2d(3) // a synchronised BatchNorm in a group of one
	NormalInit(synced.Weight.Value, 1, r)
	synced.Sync = func([]float32) error { return nil }
	// A synchronised BatchNorm with a second process whose batch is fixed:
	// its per-channel sums and count join the statistics (forward calls
	// carry this process's count, > 0, last); its outputs are not in the
	// loss, so it adds nothing to the statistics' gradient (backward calls
	// end with 0).
	peered := NewBatchNorm2d(3)
	NormalInit(peered.Weight.Value, 1, r)
	peer := []float32{0.7, -1.1, 2.3, 5.5, 9.1, 12.4, 10} // Σx, Σx² per channel, count
	peered.Sync = func(buf []float32) error {
		if buf[len(buf)-1] > 0 {
			for i := range buf {
				buf[i] += peer[i]
			}
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		m    Module
		x    *tensor.Tensor
	}{
		{"linear", NewLinear(5, 3, true, r), randTensor(r, 4, 5)},
		{"linear-3d", NewLinear(5, 2, false, r), randTensor(r, 2, 3, 5)},
		{"conv3x3", NewConv2d(2, 3, 3, 1, 1, true, r), randTensor(r, 2, 2, 5, 4)},
		{"conv3x3-s2", NewConv2d(2, 3, 3, 2, 1, false, r), randTensor(r, 2, 2, 5, 6)},
		{"conv1x1-s2", NewConv2d(3, 2, 1, 2, 0, false, r), randTensor(r, 2, 3, 5, 5)},
		{"conv7x7-s2", NewConv2d(1, 2, 7, 2, 3, false, r), randTensor(r, 1, 1, 9, 8)},
		{"bn2d-train", bnTrain, randTensor(r, 4, 3, 2, 3)},
		{"bn2d-eval", bnEval, randTensor(r, 4, 3, 2, 3)},
		{"bn2d-ghost", ghost, randTensor(r, 4, 3, 2, 2)},
		{"bn2d-sync", synced, randTensor(r, 4, 3, 2, 3)},
		{"bn2d-sync-peer", peered, randTensor(r, 4, 3, 2, 3)},
		{"bn1d", bn1d, randTensor(r, 6, 4)},
		{"relu", NewReLU(), awayFromZero(randTensor(r, 3, 7), 0.05)},
		{"maxpool", NewMaxPool2d(3, 2, 1), spread(r, 2, 3, 7, 6)},
		{"avgpool", NewAdaptiveAvgPool2d(3, 2), randTensor(r, 2, 3, 7, 6)},
		{"flatten", NewFlatten(), randTensor(r, 2, 3, 2, 2)},
		{"mlp", NewSequential(NewLinear(4, 6, true, r), NewBatchNorm1d(6), NewLinear(6, 2, true, r)), randTensor(r, 5, 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gradcheck.Assert(t, func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
				return tc.m.Forward(tp, in[0])
			}, []*tensor.Tensor{tc.x}, gradcheck.Options{Params: Parameters(tc.m)})
		})
	}
}
