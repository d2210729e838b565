package optim

import (
	"strings"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// LARSConfig holds LARS's hyper-parameters. A zero Eta means 1e-3 (the
// trust coefficient) and a zero Eps means 1e-8. Exclude selects the
// parameters that get neither the layer-wise adaptation nor weight decay;
// nil means ExcludeBiasAndNorm.
type LARSConfig struct {
	LR          float64
	Momentum    float64
	Dampening   float64
	Nesterov    bool
	WeightDecay float64
	Eta         float64
	Eps         float64
	// ClipLR caps the local rate: lars_lr = min(lars_lr/lr, 1).
	ClipLR  bool
	Exclude func(name string, shape []int) bool
}

// ExcludeBiasAndNorm is the usual LARS exclusion: biases and normalisation
// parameters, recognised as parameters with at most one dimension or a name
// ending in ".bias".
func ExcludeBiasAndNorm(name string, shape []int) bool {
	return len(shape) <= 1 || strings.HasSuffix(name, ".bias")
}

// LARS is layer-wise adaptive rate scaling in the formulation of solo-learn
// (after NVIDIA apex). For a parameter that is not excluded, when ‖p‖ and
// ‖g‖ are both non-zero:
//
//	lars_lr = eta * ‖p‖ / (‖g‖ + wd*‖p‖ + eps)     (ClipLR: min(lars_lr/lr, 1))
//	d = (g + wd*p) * lars_lr
//
// otherwise (excluded, or a zero norm) d = g with no weight decay. Then SGD
// with momentum as in SGD: buf = d at the first step, later
// buf = momentum*buf + (1-dampening)*d; d = d + momentum*buf (Nesterov) or
// buf; p = p - lr*d.
type LARS struct {
	base
	cfg     LARSConfig
	buf     buffers
	exclude []bool
}

// NewLARS returns a LARS optimizer over params. Parameter names (Var.Name)
// and shapes are passed to cfg.Exclude once, here.
func NewLARS(params []*autograd.Var, cfg LARSConfig) (*LARS, error) {
	if err := checkParams("LARS", params); err != nil {
		return nil, err
	}
	if cfg.Eta == 0 {
		cfg.Eta = 1e-3
	}
	if cfg.Eps == 0 {
		cfg.Eps = 1e-8
	}
	if cfg.Exclude == nil {
		cfg.Exclude = ExcludeBiasAndNorm
	}
	for _, h := range []struct {
		name string
		v    float64
	}{{"lr", cfg.LR}, {"momentum", cfg.Momentum}, {"dampening", cfg.Dampening}, {"weight decay", cfg.WeightDecay}, {"eta", cfg.Eta}, {"eps", cfg.Eps}} {
		if err := checkHyper("LARS", h.name, h.v); err != nil {
			return nil, err
		}
	}
	ex := make([]bool, len(params))
	for i, p := range params {
		ex[i] = cfg.Exclude(p.Name, p.Value.Shape())
	}
	return &LARS{base: base{params: params, lr: cfg.LR}, cfg: cfg, buf: make(buffers, len(params)), exclude: ex}, nil
}

// Excluded reports whether parameter i is excluded from adaptation and decay.
func (o *LARS) Excluded(i int) bool { return o.exclude[i] }

// Step applies one LARS update.
func (o *LARS) Step() {
	for i, p := range o.params {
		g := gradOf(p)
		if g == nil {
			continue
		}
		a := tensor.LARSArgs{SGD: tensor.SGDArgs{LR: o.lr, WeightDecay: o.cfg.WeightDecay, Momentum: o.cfg.Momentum,
			Dampening: o.cfg.Dampening, Nesterov: o.cfg.Nesterov},
			Eta: o.cfg.Eta, Eps: o.cfg.Eps, ClipLR: o.cfg.ClipLR, Excluded: o.exclude[i]}
		var buf *tensor.Tensor
		if a.Momentum != 0 {
			buf, a.First = o.buf.get(i, p)
		}
		larsStep(p.Value, g, buf, a)
	}
}

// StateDict returns the momentum buffers as "<i>.momentum_buffer".
func (o *LARS) StateDict() map[string]*tensor.Tensor {
	m := map[string]*tensor.Tensor{}
	o.buf.stateDict(m, "momentum_buffer")
	return m
}

// LoadStateDict restores momentum buffers saved by StateDict.
func (o *LARS) LoadStateDict(state map[string]*tensor.Tensor) error {
	return loadStateDict("LARS", o.params, state, map[string]buffers{"momentum_buffer": o.buf}, nil)
}
