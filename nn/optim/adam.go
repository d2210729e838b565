package optim

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// AdamConfig holds the hyper-parameters of Adam and AdamW. A zero Beta1,
// Beta2 or Eps selects PyTorch's default (0.9, 0.999, 1e-8); to ask for an
// exact zero beta use a negligible value such as 1e-12.
type AdamConfig struct {
	LR          float64
	Beta1       float64
	Beta2       float64
	Eps         float64
	WeightDecay float64
}

func (c AdamConfig) withDefaults() AdamConfig {
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Eps == 0 {
		c.Eps = 1e-8
	}
	return c
}

// Adam is torch.optim.Adam (Decoupled false) or torch.optim.AdamW
// (Decoupled true). With t the parameter's step count after increment:
//
//	g = g + wd*p                 (Adam: L2 penalty in the gradient)
//	p = p * (1 - lr*wd)          (AdamW: decoupled decay, before the update)
//	m = beta1*m + (1-beta1)*g
//	v = beta2*v + (1-beta2)*g²
//	p = p - lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)
//
// eps is added outside the square root, as in PyTorch.
type Adam struct {
	base
	cfg       AdamConfig
	decoupled bool
	m, v      buffers
	steps     []int64
}

// NewAdam returns torch.optim.Adam over params.
func NewAdam(params []*autograd.Var, cfg AdamConfig) (*Adam, error) {
	return newAdam("Adam", params, cfg, false)
}

// NewAdamW returns torch.optim.AdamW (decoupled weight decay) over params.
// Note that PyTorch's AdamW default weight decay is 0.01; here the zero
// value means no decay.
func NewAdamW(params []*autograd.Var, cfg AdamConfig) (*Adam, error) {
	return newAdam("AdamW", params, cfg, true)
}

func newAdam(kind string, params []*autograd.Var, cfg AdamConfig, decoupled bool) (*Adam, error) {
	if err := checkParams(kind, params); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	for _, h := range []struct {
		name string
		v    float64
	}{{"lr", cfg.LR}, {"eps", cfg.Eps}, {"weight decay", cfg.WeightDecay}} {
		if err := checkHyper(kind, h.name, h.v); err != nil {
			return nil, err
		}
	}
	if !(cfg.Beta1 > 0 && cfg.Beta1 < 1) || !(cfg.Beta2 > 0 && cfg.Beta2 < 1) {
		return nil, fmt.Errorf("optim: %s: betas (%v, %v), expected values in (0, 1)", kind, cfg.Beta1, cfg.Beta2)
	}
	n := len(params)
	return &Adam{base: base{params: params, lr: cfg.LR}, cfg: cfg, decoupled: decoupled,
		m: make(buffers, n), v: make(buffers, n), steps: make([]int64, n)}, nil
}

func (o *Adam) kind() string {
	if o.decoupled {
		return "AdamW"
	}
	return "Adam"
}

// Step applies one Adam or AdamW update.
func (o *Adam) Step() {
	var gs groups[tensor.AdamArgs]
	for i, p := range o.params {
		g := gradOf(p)
		if g == nil {
			continue
		}
		o.steps[i]++
		m, _ := o.m.get(i, p)
		v, _ := o.v.get(i, p)
		a := tensor.AdamArgs{LR: o.lr, Beta1: o.cfg.Beta1, Beta2: o.cfg.Beta2, Eps: o.cfg.Eps,
			WeightDecay: o.cfg.WeightDecay, Decoupled: o.decoupled, Step: o.steps[i]}
		if !gs.add(a, p.Value, g, m, v) {
			adamStep(p.Value, g, m, v, a)
		}
	}
	for _, g := range gs {
		g.be.AdamSteps(g.ops[0], g.ops[1], g.ops[2], g.ops[3], g.args)
	}
}

// StateDict returns "<i>.exp_avg", "<i>.exp_avg_sq" and "<i>.step" (PyTorch's names).
func (o *Adam) StateDict() map[string]*tensor.Tensor {
	m := map[string]*tensor.Tensor{}
	o.m.stateDict(m, "exp_avg")
	o.v.stateDict(m, "exp_avg_sq")
	for i, s := range o.steps {
		if s > 0 {
			m[fmt.Sprintf("%d.step", i)] = tensor.Scalar(float32(s))
		}
	}
	return m
}

// LoadStateDict restores a state saved by StateDict.
func (o *Adam) LoadStateDict(state map[string]*tensor.Tensor) error {
	return loadStateDict(o.kind(), o.params, state, map[string]buffers{"exp_avg": o.m, "exp_avg_sq": o.v}, o.steps)
}
