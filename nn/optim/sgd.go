package optim

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// SGDConfig holds SGD's hyper-parameters (PyTorch's names and defaults: all
// zero except LR).
type SGDConfig struct {
	LR          float64
	Momentum    float64
	Dampening   float64
	Nesterov    bool
	WeightDecay float64
}

// SGD is stochastic gradient descent with momentum, as torch.optim.SGD:
//
//	d = g + wd*p
//	buf = d                                   (first step)
//	buf = momentum*buf + (1-dampening)*d      (later steps)
//	d = d + momentum*buf  (Nesterov)   or   d = buf
//	p = p - lr*d
//
// Without momentum the buffer is not used: p = p - lr*d.
type SGD struct {
	base
	cfg SGDConfig
	buf buffers
}

// NewSGD returns an SGD optimizer over params.
func NewSGD(params []*autograd.Var, cfg SGDConfig) (*SGD, error) {
	if err := checkParams("SGD", params); err != nil {
		return nil, err
	}
	for _, h := range []struct {
		name string
		v    float64
	}{{"lr", cfg.LR}, {"momentum", cfg.Momentum}, {"dampening", cfg.Dampening}, {"weight decay", cfg.WeightDecay}} {
		if err := checkHyper("SGD", h.name, h.v); err != nil {
			return nil, err
		}
	}
	if cfg.Nesterov && (cfg.Momentum <= 0 || cfg.Dampening != 0) {
		return nil, fmt.Errorf("optim: SGD: Nesterov momentum needs momentum > 0 and zero dampening (got momentum %v, dampening %v)", cfg.Momentum, cfg.Dampening)
	}
	return &SGD{base: base{params: params, lr: cfg.LR}, cfg: cfg, buf: make(buffers, len(params))}, nil
}

// Step applies one SGD update.
func (o *SGD) Step() {
	lr, wd, mom := o.lr, o.cfg.WeightDecay, o.cfg.Momentum
	damp := 1 - o.cfg.Dampening
	for i, p := range o.params {
		g := gradOf(p)
		if g == nil {
			continue
		}
		w := p.Value.Data()
		if mom == 0 {
			for j := range w {
				d := float64(g[j]) + wd*float64(w[j])
				w[j] = float32(float64(w[j]) - lr*d)
			}
			continue
		}
		buf, first := o.buf.get(i, p)
		for j := range w {
			d := float64(g[j]) + wd*float64(w[j])
			d = momentumStep(d, &buf[j], first, mom, damp, o.cfg.Nesterov)
			w[j] = float32(float64(w[j]) - lr*d)
		}
	}
}

// StateDict returns the momentum buffers as "<i>.momentum_buffer".
func (o *SGD) StateDict() map[string]*tensor.Tensor {
	m := map[string]*tensor.Tensor{}
	o.buf.stateDict(m, "momentum_buffer")
	return m
}

// LoadStateDict restores momentum buffers saved by StateDict.
func (o *SGD) LoadStateDict(state map[string]*tensor.Tensor) error {
	return loadStateDict("SGD", o.params, state, map[string]buffers{"momentum_buffer": o.buf}, nil)
}
