package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/linear"
	"github.com/duel-ssl/duel/tensor"
)

// Linear is y = x W^T + b over the last axis of x, PyTorch's nn.Linear;
// the passes are kernels/linear's.
// Members: weight (Out x In), bias (Out) when present.
type Linear struct {
	In, Out int
	Weight  *autograd.Var
	Bias    *autograd.Var // nil without bias

	arena *Arena
}

// SetArena makes the layer allocate from a.
func (l *Linear) SetArena(a *Arena) { l.arena = a }

// NewLinear returns a Linear layer with PyTorch's default initialisation
// drawn from r.
func NewLinear(in, out int, bias bool, r *rand.Rand) *Linear {
	l := &Linear{In: in, Out: out, Weight: autograd.Param(tensor.New(out, in), "weight")}
	var b *tensor.Tensor
	if bias {
		b = tensor.New(out)
		l.Bias = autograd.Param(b, "bias")
	}
	DefaultInit(l.Weight.Value, b, r)
	return l
}

// Members returns weight and bias.
func (l *Linear) Members() []Member {
	ms := []Member{{Name: "weight", Param: l.Weight}}
	if l.Bias != nil {
		ms = append(ms, Member{Name: "bias", Param: l.Bias})
	}
	return ms
}

// Forward maps x of shape (..., In) to (..., Out).
func (l *Linear) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) == 0 || shape[len(shape)-1] != l.In {
		panic(fmt.Sprintf("nn.Linear(%d, %d): input of shape %v, expected (..., %d)", l.In, l.Out, shape, l.In))
	}
	rows := x.Value.Numel() / l.In
	outShape := append(append([]int(nil), shape[:len(shape)-1]...), l.Out)
	xd, w := data(x), l.Weight.Value.Data()
	y := l.arena.tensor(false, outShape...)
	yd := y.Data()
	inputs := []*autograd.Var{x, l.Weight}
	var b []float32
	if l.Bias != nil {
		b = l.Bias.Value.Data()
		inputs = append(inputs, l.Bias)
	}
	linear.Forward(xd, w, b, yd, rows, l.In, l.Out)
	return tp.Record(y, func(out *autograd.Var) {
		defer l.arena.release(out.Grad)
		dy := gradOf(out)
		if dx, acc := l.arena.gradSlot(x); dx != nil {
			linear.InputGrad(dx, dy, w, rows, l.In, l.Out, acc)
		}
		if dw, acc := gradSlot(l.Weight); dw != nil {
			linear.WeightGrad(dw, dy, xd, rows, l.In, l.Out, acc)
		}
		if l.Bias != nil {
			if db, _ := gradSlot(l.Bias); db != nil {
				linear.BiasGrad(db, dy, rows, l.Out)
			}
		}
	}, inputs...)
}
