package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/tensor"
)

// Linear is y = x W^T + b over the last axis of x, PyTorch's nn.Linear.
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
	gemm.Sgemm(false, true, rows, l.Out, l.In, 1, xd, l.In, w, l.In, 0, yd, l.Out)
	inputs := []*autograd.Var{x, l.Weight}
	if l.Bias != nil {
		b := l.Bias.Value.Data()
		for r := range rows {
			row := yd[r*l.Out : (r+1)*l.Out]
			for j := range row {
				row[j] += b[j]
			}
		}
		inputs = append(inputs, l.Bias)
	}
	return tp.Record(y, func(out *autograd.Var) {
		defer l.arena.release(out.Grad)
		dy := gradOf(out)
		if dx, acc := l.arena.gradSlot(x); dx != nil {
			gemm.Sgemm(false, false, rows, l.In, l.Out, 1, dy, l.Out, w, l.In, beta(acc), dx, l.In)
		}
		if dw, acc := gradSlot(l.Weight); dw != nil {
			gemm.Sgemm(true, false, l.Out, l.In, rows, 1, dy, l.Out, xd, l.In, beta(acc), dw, l.In)
		}
		if l.Bias != nil {
			if db, _ := gradSlot(l.Bias); db != nil {
				for r := range rows {
					row := dy[r*l.Out : (r+1)*l.Out]
					for j, v := range row {
						db[j] += v
					}
				}
			}
		}
	}, inputs...)
}
