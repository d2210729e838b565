package nn

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
)

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
		if !onHost(x.Value) {
			autograd.AccumulateGrad(x, out.Grad.Contiguous().Reshape(shape...))
			return
		}
		addGrad(x, out.Grad.Reshape(shape...))
	}, x)
}

func shapeStr(v *autograd.Var) string { return fmt.Sprint(v.Value.Shape()) }
