package nn

import (
	"fmt"
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

// Identity returns its input, PyTorch's nn.Identity (used to drop a
// classifier head).
type Identity struct{}

// NewIdentity returns an Identity layer.
func NewIdentity() *Identity { return &Identity{} }

// Members returns nil.
func (*Identity) Members() []Member { return nil }

// Forward returns x.
func (*Identity) Forward(_ *autograd.Tape, x *autograd.Var) *autograd.Var { return x }

// Flatten reshapes (N, d1, d2, ...) to (N, d1*d2*...), PyTorch's
// nn.Flatten() with start_dim 1.
type Flatten struct{}

// NewFlatten returns a Flatten layer.
func NewFlatten() *Flatten { return &Flatten{} }

// Members returns nil.
func (*Flatten) Members() []Member { return nil }

// Forward flattens all axes after the first.
func (*Flatten) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) < 1 {
		panic(fmt.Sprintf("nn.Flatten: input of shape %v, expected at least 1 axis", shape))
	}
	n := shape[0]
	rest := 1
	for _, d := range shape[1:] {
		rest *= d
	}
	y := x.Value.Contiguous().Reshape(n, rest)
	return tp.Record(y, func(out *autograd.Var) {
		addGrad(x, out.Grad.Reshape(shape...))
	}, x)
}

func shapeStr(v *autograd.Var) string { return fmt.Sprint(v.Value.Shape()) }
