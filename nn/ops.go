package nn

import (
	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/internal/par"
	"github.com/duel-ssl/duel/tensor"
)

// data returns the elements of v's value in row-major order, without a copy
// when the value is contiguous.
func data(v *autograd.Var) []float32 { return v.Value.Contiguous().Data() }

// gradOf returns the elements of out's gradient in a backward closure, in
// the memory layout of out's value (see layout.go).
func gradOf(out *autograd.Var) []float32 { return inLayout(out.Grad, channelMajor(out.Value)) }

// channelMajor reports whether t is stored CNHW (and not also NCHW).
func channelMajor(t *tensor.Tensor) bool { return !t.IsContiguous() && isCNHW(t) }

// gradSlot returns the storage of v's gradient, in the memory layout of v's
// value, creating it when v has none yet. acc reports whether the caller
// must add into it (true) or may overwrite it (false: freshly created, all
// zero). It returns nil when v needs no gradient.
func gradSlot(v *autograd.Var) (g []float32, acc bool) {
	if !v.RequiresGrad {
		return nil, false
	}
	cm := channelMajor(v.Value)
	if v.Grad == nil {
		v.Grad = newLayout(cm, v.Value.Shape()...)
		return storage(v.Grad), false
	}
	if channelMajor(v.Grad) != cm || !(v.Grad.IsContiguous() || isCNHW(v.Grad)) {
		g := newLayout(cm, v.Value.Shape()...)
		copy(storage(g), inLayout(v.Grad, cm))
		v.Grad = g
	}
	return storage(v.Grad), true
}

// beta returns the GEMM beta that accumulates (1) or overwrites (0).
func beta(acc bool) float32 {
	if acc {
		return 1
	}
	return 0
}

// workers returns how many goroutines to split work of about n scalar
// operations over (par.Workers).
func workers(n int) int { return par.Workers(n) }

// parallelFor splits [0, n) into contiguous chunks run by up to w
// goroutines and waits for them.
func parallelFor(n, w int, f func(lo, hi int)) { par.For(n, w, f) }

// The layers compute through their input's backend (tensor.Backend and its
// optional capabilities). On the CPU their buffers come from the arena and
// keep the layout of their input (layout.go); on any other device the
// values and gradients they create are contiguous NCHW tensors on that
// device and nothing is read on the host.

// onHost reports whether t lives on the CPU.
func onHost(t *tensor.Tensor) bool { return t.Device() == tensor.CPU || t.Device() == "" }

// memOp returns the operand of t's elements in memory order seen as a dense
// tensor of the given shape: t must be contiguous or CNHW (layout.go).
func memOp(t *tensor.Tensor, shape ...int) tensor.Operand {
	o := t.Operand()
	o.Shape = shape
	o.Strides = make([]int, len(shape))
	s := 1
	for k := len(shape) - 1; k >= 0; k-- {
		o.Strides[k] = s
		s *= shape[k]
	}
	return o
}

// hostOp returns the operand of the host slice d seen as a dense tensor of
// the given shape.
func hostOp(d []float32, shape ...int) tensor.Operand {
	return memOp(tensor.FromSlice(d, len(d)), shape...)
}

// planesOf returns x dense in memory and whether it is channel-major: on
// the CPU as planes does (copying to NCHW when x is in neither layout), on
// a device always contiguous NCHW.
func planesOf(x *tensor.Tensor) (*tensor.Tensor, bool) {
	if !onHost(x) || x.IsContiguous() {
		return x.Contiguous(), false
	}
	if isCNHW(x) {
		return x, true
	}
	return x.Contiguous(), false
}

// tensorOn returns a tensor of the given shape on dev: from the arena in
// the requested layout on the CPU (arbitrary contents, see Arena.tensor), a
// zero contiguous one elsewhere.
func (a *Arena) tensorOn(dev tensor.Device, cm bool, shape ...int) *tensor.Tensor {
	if dev == tensor.CPU || dev == "" {
		return a.tensor(cm, shape...)
	}
	return tensor.ZerosOn(dev, shape...)
}

// gradIn returns out's gradient in a backward closure, dense in the memory
// layout of out's value (on a device: contiguous).
func gradIn(out *autograd.Var) *tensor.Tensor {
	if onHost(out.Value) {
		d := gradOf(out)
		return tensor.FromSlice(d, len(d))
	}
	return out.Grad.Contiguous()
}

// gradTensor is gradSlot on any device: v's gradient, dense in the layout
// of v's value on the CPU (from the arena when fresh), contiguous on a
// device, and whether the caller must add into it (acc) or may overwrite
// it. It returns nil when v needs no gradient.
func (a *Arena) gradTensor(v *autograd.Var) (*tensor.Tensor, bool) {
	if !v.RequiresGrad {
		return nil, false
	}
	if onHost(v.Value) {
		g, acc := a.gradSlot(v)
		return tensor.FromSlice(g, len(g)), acc
	}
	if v.Grad == nil {
		v.Grad = tensor.ZerosOn(v.Value.Device(), v.Value.Shape()...)
		return v.Grad, false
	}
	if !v.Grad.IsContiguous() {
		v.Grad = v.Grad.Contiguous()
	}
	return v.Grad, true
}
