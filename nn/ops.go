package nn

import (
	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// beta returns the GEMM beta that accumulates (1) or overwrites (0).
func beta(acc bool) float32 {
	if acc {
		return 1
	}
	return 0
}

// The layers compute through their input's backend (tensor.Backend and its
// optional capabilities). On the CPU their buffers come from the arena and
// keep the layout of their input (layout.go); on any other device the
// values and gradients they create are contiguous NCHW tensors on that
// device and nothing is read on the host.

// onHost reports whether t lives on the CPU. It decides memory and layout
// only (buffers from the arena, the layouts of planesOf, gradIn and
// gradTensor), never where or how a layer computes: every pass is its
// backend's.
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

// planesOf returns x dense in memory and whether it is channel-major: on
// the CPU as densePlanes does (x itself in NCHW or CNHW, else a contiguous
// copy), on a device always contiguous NCHW.
func planesOf(x *tensor.Tensor) (*tensor.Tensor, bool) {
	if !onHost(x) || x.IsContiguous() {
		return x.Contiguous(), false
	}
	if isCNHW(x) {
		return x, true
	}
	return x.Contiguous(), false
}

// tensorOn returns a tensor of the given shape on dev from the arena
// (arbitrary contents; zero for a nil arena): in the requested layout on
// the CPU (Arena.tensor), contiguous elsewhere (Arena.devTensor).
func (a *Arena) tensorOn(dev tensor.Device, cm bool, shape ...int) *tensor.Tensor {
	if dev == tensor.CPU || dev == "" {
		return a.tensor(cm, shape...)
	}
	return a.devTensor(dev, shape...)
}

// gradIn returns out's gradient in a backward closure, dense in the memory
// layout of out's value on the CPU (see layout.go), contiguous on a device
// (planesOf's layouts); a copy, when one is needed, is made by the backend.
func gradIn(out *autograd.Var) *tensor.Tensor {
	if onHost(out.Value) {
		return inLayoutOn(out.Grad, channelMajor(out.Value))
	}
	return out.Grad.Contiguous()
}

// gradTensor is v's gradient for the layers using planesOf's layouts:
// dense in the layout of v's value on the CPU (from the arena when fresh:
// actGradSlot), contiguous on a device (from the arena too when fresh),
// and whether the caller must add into it (acc) or may overwrite it. It
// returns nil when v needs no gradient.
func (a *Arena) gradTensor(v *autograd.Var) (*tensor.Tensor, bool) {
	if !v.RequiresGrad {
		return nil, false
	}
	if onHost(v.Value) {
		return a.actGradSlot(v)
	}
	if v.Grad == nil {
		v.Grad = a.devTensor(v.Value.Device(), v.Value.Shape()...)
		return v.Grad, false
	}
	if !v.Grad.IsContiguous() {
		v.Grad = v.Grad.Contiguous()
	}
	return v.Grad, true
}
