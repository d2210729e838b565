package nn

import (
	"strconv"

	"github.com/duel-ssl/duel/autograd"
)

// Sequential applies its layers in order, PyTorch's nn.Sequential: the
// members are named "0", "1", ...
type Sequential struct {
	Layers []Module
}

// NewSequential returns a Sequential of layers.
func NewSequential(layers ...Module) *Sequential { return &Sequential{Layers: layers} }

// Members returns the layers named by their index.
func (s *Sequential) Members() []Member {
	ms := make([]Member, len(s.Layers))
	for i, l := range s.Layers {
		ms[i] = Member{Name: strconv.Itoa(i), Module: l}
	}
	return ms
}

// Forward applies the layers in order.
func (s *Sequential) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	for _, l := range s.Layers {
		x = l.Forward(tp, x)
	}
	return x
}
