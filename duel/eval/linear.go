package eval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/loss"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
)

// LinearConfig holds the settings of the linear probe. DefaultLinearConfig
// gives the paper's (Appendix E).
type LinearConfig struct {
	Epochs int // passes over the training features (100)
	Batch  int // mini-batch size (256); the last batch of an epoch may be shorter
	// Optimizer is LinearAdam (the paper's, the default) or LinearSGD
	// (solo-learn's linear evaluation: momentum 0.9, the rate times 0.1
	// after 60% and 80% of the epochs, its epochs 60 and 80 of 100).
	Optimizer   LinearOptimizer
	LR          float64 // learning rate (Adam 1e-3, constant; solo-learn's SGD 0.1 before its steps)
	WeightDecay float64 // L2 penalty as torch.optim's weight_decay (Adam 1e-6; solo-learn's SGD 0)
	// Milestones are LinearSGD's epochs after which the rate drops tenfold
	// (MultiStepLR); nil takes 60% and 80% of Epochs.
	Milestones []int
	Seed       uint64 // initial weights and the order of the rows in each epoch
	// Classes is the number of outputs; 0 takes 1 + the largest label seen.
	Classes int
	// Progress, when set, is called after each epoch with the mean training
	// loss of that epoch.
	Progress func(epoch int, loss float64)
	// Device is where the layer trains (zero: the CPU): its weights and
	// Adam's moments live there, each mini-batch is copied in and its
	// loss, and the test logits, copied out.
	Device tensor.Device
}

// LinearOptimizer selects the linear probe's optimiser and schedule.
type LinearOptimizer int

const (
	// LinearAdam is the paper's probe: Adam at a constant rate.
	LinearAdam LinearOptimizer = iota
	// LinearSGD is solo-learn's: SGD with momentum 0.9, the rate times 0.1
	// after 60% and after 80% of the epochs (MultiStepLR, per epoch).
	LinearSGD
)

// LinearOptimizerNames lists the names ParseLinearOptimizer accepts, the
// default first.
var LinearOptimizerNames = []string{"adam", "sgd"}

// String returns "adam" or "sgd".
func (o LinearOptimizer) String() string {
	if o >= 0 && int(o) < len(LinearOptimizerNames) {
		return LinearOptimizerNames[o]
	}
	return fmt.Sprintf("LinearOptimizer(%d)", int(o))
}

// ParseLinearOptimizer returns the optimiser named s.
func ParseLinearOptimizer(s string) (LinearOptimizer, error) {
	for i, n := range LinearOptimizerNames {
		if s == n {
			return LinearOptimizer(i), nil
		}
	}
	return 0, fmt.Errorf("unknown linear-probe optimizer %q (expected adam or sgd)", s)
}

// SoloLinearConfig returns solo-learn's linear evaluation on cached
// features: SGD, learning rate 0.1, momentum 0.9, no weight decay, the rate
// times 0.1 at epochs 60 and 80 of 100, batch 256. (solo-learn also
// augments the training images each epoch; the probe trains on features
// extracted once, as the paper's.)
func SoloLinearConfig() LinearConfig {
	return LinearConfig{Epochs: 100, Batch: 256, Optimizer: LinearSGD, LR: 0.1}
}

// soloMomentum is solo-learn's linear-evaluation momentum.
const soloMomentum = 0.9

// milestones returns the epochs after which LinearSGD's rate drops:
// Milestones, or 60% and 80% of epochs (solo-learn's 60 and 80 of 100), rounded down, the
// repeats of short runs dropped.
func (c LinearConfig) milestones() []int {
	if c.Milestones != nil {
		return c.Milestones
	}
	var m []int
	for _, f := range []int{60, 80} {
		e := max(1, c.Epochs*f/100)
		if len(m) == 0 || e > m[len(m)-1] {
			m = append(m, e)
		}
	}
	return m
}

// DefaultLinearConfig returns the paper's linear probing settings (Appendix
// E): Adam, weight decay 1e-6, learning rate 1e-3, batch 256, 100 epochs.
// The paper's halving of the learning rate every 10 epochs was for
// ImageNet-LT only and is not applied.
func DefaultLinearConfig() LinearConfig {
	return LinearConfig{Epochs: 100, Batch: 256, LR: 1e-3, WeightDecay: 1e-6}
}

// LinearResult is the outcome of a linear probe.
type LinearResult struct {
	Result
	// TrainLoss is the mean cross-entropy over the last epoch.
	TrainLoss float64
}

// LinearProbe trains one linear layer (nn.Linear with bias, PyTorch's
// default initialisation) on the frozen features train with the
// cross-entropy loss and cfg.Optimizer (Adam by default), then returns its
// accuracy on test. The
// features are used as they are: no normalisation, as the paper's probe sits
// directly on the frozen CNN. Each epoch visits the training rows in a
// fresh random order (torch DataLoader shuffle=True, drop_last=False).
func LinearProbe(train, test *Features, cfg LinearConfig) (LinearResult, error) {
	return LinearProbeContext(context.Background(), train, test, cfg)
}

// LinearProbeContext is LinearProbe stopped by ctx: between two epochs, a
// cancelled ctx ends the fit with an error wrapping ctx's.
func LinearProbeContext(ctx context.Context, train, test *Features, cfg LinearConfig) (LinearResult, error) {
	if train.N == 0 {
		return LinearResult{}, fmt.Errorf("linear probe: no training rows")
	}
	if train.D != test.D {
		return LinearResult{}, fmt.Errorf("linear probe: training features have dimension %d, test features %d", train.D, test.D)
	}
	if cfg.Epochs < 0 || cfg.Batch <= 0 {
		return LinearResult{}, fmt.Errorf("linear probe: %d epochs of batch %d, expected epochs >= 0 and batch > 0", cfg.Epochs, cfg.Batch)
	}
	if cfg.Optimizer != LinearAdam && cfg.Optimizer != LinearSGD {
		return LinearResult{}, fmt.Errorf("linear probe: unknown optimizer %d", cfg.Optimizer)
	}
	if !(cfg.LR > 0) || !(cfg.WeightDecay >= 0) {
		return LinearResult{}, fmt.Errorf("linear probe: learning rate %v, weight decay %v, expected lr > 0 and weight decay >= 0", cfg.LR, cfg.WeightDecay)
	}
	classes := cfg.Classes
	if classes == 0 {
		classes = max(train.NumClasses(), test.NumClasses())
	}
	if n := train.NumClasses(); n > classes {
		return LinearResult{}, fmt.Errorf("linear probe: training label %d, expected < %d classes", n-1, classes)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x6c696e656172))
	lin := nn.NewLinear(train.D, classes, true, r)
	dev := cfg.Device
	if dev == "" {
		dev = tensor.CPU
	}
	if err := nn.To(lin, dev); err != nil {
		return LinearResult{}, fmt.Errorf("linear probe: %w", err)
	}
	lastLoss, err := fitLinear(ctx, lin, train, cfg, func() []int { return r.Perm(train.N) })
	if err != nil {
		return LinearResult{}, err
	}
	res, err := scoreLinear(lin, test, train.N)
	if err != nil {
		return LinearResult{}, err
	}
	return LinearResult{Result: res, TrainLoss: lastLoss}, nil
}

// fitLinear trains lin on train for cfg.Epochs epochs, each visiting the rows
// in the order returned by order, and returns the mean loss of the last
// epoch; a cancelled ctx stops it between two epochs.
func fitLinear(ctx context.Context, lin *nn.Linear, train *Features, cfg LinearConfig, order func() []int) (float64, error) {
	var opt optim.Optimizer
	var sched optim.Schedule = optim.Constant(cfg.LR)
	var err error
	if cfg.Optimizer == LinearSGD {
		opt, err = optim.NewSGD(nn.Parameters(lin), optim.SGDConfig{LR: cfg.LR, Momentum: soloMomentum, WeightDecay: cfg.WeightDecay})
		if err == nil {
			sched, err = optim.StepSchedule(cfg.LR, cfg.milestones(), 0.1)
		}
	} else {
		opt, err = optim.NewAdam(nn.Parameters(lin), optim.AdamConfig{LR: cfg.LR, WeightDecay: cfg.WeightDecay})
	}
	if err != nil {
		return 0, fmt.Errorf("linear probe: %w", err)
	}
	dev := nn.DeviceOf(lin)
	xb := make([]float32, cfg.Batch*train.D)
	yb := make([]int, cfg.Batch)
	tp := autograd.NewTape()
	var lastLoss float64
	for epoch := 0; epoch < cfg.Epochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("linear probe stopped after %d of %d epochs: %w", epoch, cfg.Epochs, err)
		}
		opt.SetLR(sched.LR(epoch))
		perm := order()
		var sum float64
		for start := 0; start < train.N; start += cfg.Batch {
			m := min(cfg.Batch, train.N-start)
			for k, i := range perm[start : start+m] {
				copy(xb[k*train.D:(k+1)*train.D], train.Row(i))
				yb[k] = int(train.Labels[i])
			}
			xd, err := tensor.FromSlice(xb[:m*train.D], m, train.D).To(dev)
			if err != nil {
				return 0, fmt.Errorf("linear probe: copying a batch to %s: %w", dev, err)
			}
			x := autograd.Const(xd)
			tp.Reset()
			l := loss.CrossEntropy(tp, lin.Forward(tp, x), yb[:m])
			tp.Backward(l)
			opt.Step()
			opt.ZeroGrad()
			sum += float64(l.Value.Item()) * float64(m)
		}
		lastLoss = sum / float64(train.N)
		if math.IsNaN(lastLoss) || math.IsInf(lastLoss, 0) {
			return 0, fmt.Errorf("linear probe: training loss became %v at epoch %d", lastLoss, epoch+1)
		}
		if cfg.Progress != nil {
			cfg.Progress(epoch+1, lastLoss)
		}
	}
	return lastLoss, nil
}

// scoreLinear returns the accuracy of lin on test, on lin's device.
func scoreLinear(lin *nn.Linear, test *Features, trainRows int) (Result, error) {
	var acc accuracy
	dev := nn.DeviceOf(lin)
	scores := make([]float64, lin.Out)
	for start := 0; start < test.N; start += 1024 {
		m := min(1024, test.N-start)
		xd, err := tensor.FromSlice(test.X[start*test.D:(start+m)*test.D], m, test.D).To(dev)
		if err != nil {
			return Result{}, fmt.Errorf("linear probe: copying test rows to %s: %w", dev, err)
		}
		y, err := lin.Forward(nil, autograd.Const(xd)).Value.To(tensor.CPU)
		if err != nil {
			return Result{}, fmt.Errorf("linear probe: copying logits from %s: %w", dev, err)
		}
		logits := y.Contiguous().Data()
		for k := 0; k < m; k++ {
			for c := range scores {
				scores[c] = float64(logits[k*lin.Out+c])
			}
			acc.add(scores, int(test.Labels[start+k]))
		}
	}
	return acc.result(lin.Out, trainRows), nil
}
