package tensor

import (
	"github.com/duel-ssl/duel/internal/par"
	"github.com/duel-ssl/duel/kernels/vecmath"
)

// ActivationBackend is an optional capability of a Backend, discovered by
// type assertion as io.WriterTo is: the ReLU of package nn's ReLU layer
// and the fused add+ReLU ending a residual block (nn.AddRelu), forward and
// backward, each in one pass. Every operand is a dense operand of the same
// number of elements on this backend's storage, taken in memory order: the
// layout of the activations (NCHW or CNHW) does not matter as long as all
// operands of a call share it. A backend without it still runs the layers:
// package nn then composes them from core operations (autograd.ReLU of
// autograd.Add: the same float32 sum and values). The CPU backend computes
// them with package kernels/vecmath's branch-free loops, split over
// goroutines as the other layer kernels are (internal/par).
type ActivationBackend interface {
	// ReLU sets y = max(x, 0).
	ReLU(y, x Operand)
	// AddReLU sets y = max(a + b, 0), the sum rounded to float32 first.
	AddReLU(y, a, b Operand)
	// ReLUBack sets (adds, when acc) dx = dy where y > 0, else 0, for y
	// the output of ReLU or AddReLU (so y >= 0).
	ReLUBack(dx, dy, y Operand, acc bool)
}

var _ ActivationBackend = cpu{}

func (cpu) ReLU(y, x Operand) {
	yd, xd := flat("ReLU", y), flat("ReLU", x)
	xd = xd[:len(yd)]
	par.For(len(yd), par.Workers(len(yd)), func(lo, hi int) {
		vecmath.AffineReLU(yd[lo:hi], xd[lo:hi], 0, 1, 0) // (x-0)*1+0 = x
	})
}

func (cpu) AddReLU(y, a, b Operand) {
	yd, ad, bd := flat("AddReLU", y), flat("AddReLU", a), flat("AddReLU", b)
	ad, bd = ad[:len(yd)], bd[:len(yd)]
	par.For(len(yd), par.Workers(len(yd)), func(lo, hi int) {
		vecmath.AffineAddReLU(yd[lo:hi], ad[lo:hi], bd[lo:hi], 0, 1, 0)
	})
}

func (cpu) ReLUBack(dx, dy, y Operand, acc bool) {
	dxd, dyd, yd := flat("ReLUBack", dx), flat("ReLUBack", dy), flat("ReLUBack", y)
	dyd, yd = dyd[:len(dxd)], yd[:len(dxd)]
	par.For(len(dxd), par.Workers(len(dxd)), func(lo, hi int) {
		vecmath.ReLUGrad(dxd[lo:hi], dyd[lo:hi], yd[lo:hi], acc)
	})
}
