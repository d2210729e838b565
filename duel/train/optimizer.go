package train

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn/optim"
)

// defaultLARSEta is LARS's trust coefficient unless --lars-eta says
// otherwise: the LARS paper's and solo-learn's LARS default (its CIFAR and
// ImageNet-100 scripts set 0.02 with clip_lr).
const defaultLARSEta = 1e-3

// newOptimizer builds the optimizer of c over params.
func newOptimizer(c *Config, params []*autograd.Var) (optim.Optimizer, error) {
	switch c.Optimizer {
	case "adam":
		return optim.NewAdam(params, optim.AdamConfig{LR: c.LR, WeightDecay: c.WD})
	case "adamw":
		return optim.NewAdamW(params, optim.AdamConfig{LR: c.LR, WeightDecay: c.WD})
	case "sgd":
		return optim.NewSGD(params, optim.SGDConfig{LR: c.LR, Momentum: c.Momentum, WeightDecay: c.WD})
	case "lars":
		return optim.NewLARS(params, optim.LARSConfig{LR: c.LR, Momentum: c.Momentum, WeightDecay: c.WD, Eta: c.LARSEta, ClipLR: c.LARSClip})
	}
	return nil, bad("optimizer", fmt.Sprintf("%q", c.Optimizer), "adam, adamw, sgd or lars")
}
