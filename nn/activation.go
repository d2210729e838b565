package nn

import (
	"slices"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/vecmath"
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
// may be nil). Off the CPU it is autograd.ReLU (the backend's Unary and
// UnaryGrad: the same values).
func (a *Arena) Relu(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	if !onHost(x.Value) {
		return autograd.ReLU(tp, x)
	}
	xd, cm := planes(x.Value)
	y := a.tensor(cm, x.Value.Shape()...)
	yd := storage(y)
	parallelFor(len(xd), workers(len(xd)), func(lo, hi int) {
		vecmath.AffineReLU(yd[lo:hi], xd[lo:hi], 0, 1, 0) // (x-0)*1+0 = x
	})
	return tp.Record(y, func(out *autograd.Var) {
		defer a.release(out.Grad)
		a.reluBackward(x, yd, gradOf(out))
	}, x)
}

// reluBackward adds dy where y > 0 into x's gradient.
func (a *Arena) reluBackward(x *autograd.Var, yd, dy []float32) {
	dx, acc := a.gradSlot(x)
	if dx == nil {
		return
	}
	parallelFor(len(dx), workers(len(dx)), func(lo, hi int) {
		vecmath.ReLUGrad(dx[lo:hi], dy[lo:hi], yd[lo:hi], acc)
	})
}

// AddRelu returns max(a + b, 0) for a and b of the same shape: the end of a
// residual block, fused into one pass.
func AddRelu(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var {
	return (*Arena)(nil).AddRelu(tp, a, b)
}

// AddRelu is the functional AddRelu allocating from the arena ar (which may
// be nil). Off the CPU it is autograd.ReLU of autograd.Add (the same
// float32 sum and values).
func (ar *Arena) AddRelu(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var {
	if !slices.Equal(a.Value.Shape(), b.Value.Shape()) {
		panic("nn.AddRelu: shapes " + shapeStr(a) + " and " + shapeStr(b) + " differ")
	}
	if !onHost(a.Value) {
		return autograd.ReLU(tp, autograd.Add(tp, a, b))
	}
	ad, cm := planes(a.Value)
	b = ar.toLayout(tp, b, cm)
	bd := storage(b.Value)
	y := ar.tensor(cm, a.Value.Shape()...)
	yd := storage(y)
	parallelFor(len(ad), workers(len(ad)), func(lo, hi int) {
		vecmath.AffineAddReLU(yd[lo:hi], ad[lo:hi], bd[lo:hi], 0, 1, 0)
	})
	return tp.Record(y, func(out *autograd.Var) {
		defer ar.release(out.Grad)
		dy := gradOf(out)
		ar.reluBackward(a, yd, dy)
		ar.reluBackward(b, yd, dy)
	}, a, b)
}

// toLayout returns v stored channel-major (cm) or NCHW: v itself when it
// already is, otherwise a copy whose gradient flows back to v.
func (a *Arena) toLayout(tp *autograd.Tape, v *autograd.Var, cm bool) *autograd.Var {
	if _, vcm := planes(v.Value); vcm == cm && (cm || v.Value.IsContiguous()) {
		return v
	}
	y := a.tensor(cm, v.Value.Shape()...)
	copy(storage(y), inLayout(v.Value, cm))
	return tp.Record(y, func(out *autograd.Var) {
		defer a.release(out.Grad)
		addGrad(v, out.Grad)
	}, v)
}

// addGrad adds g (any layout) into v's gradient.
func addGrad(v *autograd.Var, g *tensor.Tensor) {
	dv, acc := gradSlot(v)
	if dv == nil {
		return
	}
	src := inLayout(g, channelMajor(v.Value))
	if !acc {
		copy(dv, src)
		return
	}
	for i, x := range src {
		dv[i] += x
	}
}
