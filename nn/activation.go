package nn

import (
	"slices"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// ReLU is max(x, 0) elementwise, PyTorch's nn.ReLU.
type ReLU struct{ arena *Arena }

// SetArena makes the layer allocate from a.
func (r *ReLU) SetArena(a *Arena) { r.arena = a }

// NewReLU returns a ReLU layer.
func NewReLU() *ReLU { return &ReLU{} }

// Members returns nil: ReLU has no state.
func (*ReLU) Members() []Member { return nil }

// Forward returns max(x, 0).
func (r *ReLU) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return r.arena.Relu(tp, x) }

// Relu is the functional form of ReLU.
func Relu(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return (*Arena)(nil).Relu(tp, x) }

// Relu is the functional form of ReLU allocating from the arena a (which
// may be nil). Both passes are x's backend's tensor.ActivationBackend
// (kernels/vecmath's on the CPU), over x in its memory layout (NCHW or
// CNHW: the output keeps it); on a backend without the capability it is
// autograd.ReLU (the backend's Unary and UnaryGrad: the same values).
func (a *Arena) Relu(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	ab, ok := x.Value.Backend().(tensor.ActivationBackend)
	if !ok {
		return autograd.ReLU(tp, x)
	}
	xv, cm := densePlanes(x.Value)
	y := a.act(xv.Device(), cm, xv.Shape()...)
	n := y.Numel()
	ab.ReLU(memOp(y, n), memOp(xv, n))
	return tp.Record(y, func(out *autograd.Var) {
		defer a.release(out.Grad)
		a.reluBack(ab, x, y, a.actGrad(out))
	}, x)
}

// reluBack adds dy where y > 0 into x's gradient, for y (in x's layout)
// the output of a ReLU of x and dy its gradient in the same layout.
func (a *Arena) reluBack(ab tensor.ActivationBackend, x *autograd.Var, y, dy *tensor.Tensor) {
	dx, acc := a.actGradSlot(x)
	if dx == nil {
		return
	}
	n := y.Numel()
	ab.ReLUBack(memOp(dx, n), memOp(dy, n), memOp(y, n), acc)
}

// AddRelu returns max(a + b, 0) for a and b of the same shape: the end of a
// residual block, fused into one pass.
func AddRelu(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var {
	return (*Arena)(nil).AddRelu(tp, a, b)
}

// AddRelu is the functional AddRelu allocating from the arena ar (which may
// be nil). Both passes are a's backend's tensor.ActivationBackend
// (kernels/vecmath's on the CPU), in a's memory layout (b is copied to it
// when stored otherwise); on a backend without the capability it is
// autograd.ReLU of autograd.Add (the same float32 sum and values).
func (ar *Arena) AddRelu(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var {
	if !slices.Equal(a.Value.Shape(), b.Value.Shape()) {
		panic("nn.AddRelu: shapes " + shapeStr(a) + " and " + shapeStr(b) + " differ")
	}
	ab, ok := a.Value.Backend().(tensor.ActivationBackend)
	if !ok {
		return autograd.ReLU(tp, autograd.Add(tp, a, b))
	}
	av, cm := densePlanes(a.Value)
	b = ar.toLayoutOn(tp, b, cm)
	y := ar.act(av.Device(), cm, av.Shape()...)
	n := y.Numel()
	ab.AddReLU(memOp(y, n), memOp(av, n), memOp(b.Value, n))
	return tp.Record(y, func(out *autograd.Var) {
		defer ar.release(out.Grad)
		dy := ar.actGrad(out)
		ar.reluBack(ab, a, y, dy)
		ar.reluBack(ab, b, y, dy)
	}, a, b)
}

// addGrad adds g (any layout) into v's gradient, kept in the layout of
// v's value: one copy or add by v's backend (Unary copy, AddScaled), on
// any device.
func addGrad(v *autograd.Var, g *tensor.Tensor) {
	dv, acc := (*Arena)(nil).actGradSlot(v)
	if dv == nil {
		return
	}
	if acc {
		dv.AddScaledInPlace(1, g)
		return
	}
	tensor.CopyInto(dv, g)
}
