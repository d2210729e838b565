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

// Step applies one SGD update: the parameters of a backend with
// multi-parameter steps in one call per device (see multi.go), the others
// one by one.
func (o *SGD) Step() {
	var gs groups[tensor.SGDArgs]
	for i, p := range o.params {
		g := gradOf(p)
		if g == nil {
			continue
		}
		a := tensor.SGDArgs{LR: o.lr, WeightDecay: o.cfg.WeightDecay, Momentum: o.cfg.Momentum,
			Dampening: o.cfg.Dampening, Nesterov: o.cfg.Nesterov}
		var buf *tensor.Tensor
		if a.Momentum != 0 {
			buf, a.First = o.buf.get(i, p)
		}
		if !gs.add(a, p.Value, g, buf) {
			sgdStep(p.Value, g, buf, a)
		}
	}
	for _, g := range gs {
		g.be.SGDSteps(g.ops[0], g.ops[1], g.ops[2], g.args)
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
