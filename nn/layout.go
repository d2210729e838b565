package nn

import (
	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// Activations of shape (N, C, ...) come in two memory layouts. Both have
// the same shape and meaning; only the strides differ:
//
//   - NCHW: row-major, sample-major (the tensor package's contiguous layout);
//   - CNHW: channel-major, a Permute(1, 0, ...) view of a contiguous
//     (C, N, ...) tensor.
//
// Conv2d writes CNHW: the whole batch is then one GEMM operand (Cout x
// N*OH*OW), and BatchNorm finds each channel in one contiguous block.
// BatchNorm, ReLU and the pools keep their input's layout; callers who need
// NCHW data call Contiguous.

// isCNHW reports whether t, of rank >= 2, is stored channel-major and dense.
func isCNHW(t *tensor.Tensor) bool {
	sh, st := t.Shape(), t.Strides()
	if len(sh) < 2 {
		return false
	}
	s := 1
	for k := len(sh) - 1; k >= 2; k-- {
		if sh[k] != 1 && st[k] != s {
			return false
		}
		s *= sh[k]
	}
	return (sh[0] == 1 || st[0] == s) && (sh[1] == 1 || st[1] == sh[0]*s)
}

// channelMajor reports whether t is stored CNHW (and not also NCHW).
func channelMajor(t *tensor.Tensor) bool { return !t.IsContiguous() && isCNHW(t) }

// newLayout returns a zero tensor of the given shape in CNHW (cm) or NCHW
// layout.
func newLayout(cm bool, shape ...int) *tensor.Tensor {
	if !cm || len(shape) < 2 {
		return tensor.New(shape...)
	}
	perm := append([]int{shape[1], shape[0]}, shape[2:]...)
	axes := make([]int, len(shape))
	for i := range axes {
		axes[i] = i
	}
	axes[0], axes[1] = 1, 0
	return tensor.New(perm...).Permute(axes...)
}

// The two helpers below read host memory: no layer calls them; the tests
// use them to look at CPU activations in memory order.

// storage returns the dense elements of a CNHW or contiguous CPU tensor in
// memory order.
func storage(t *tensor.Tensor) []float32 {
	return t.Storage()[t.Offset() : t.Offset()+t.Numel()]
}

// inLayout returns the elements of the CPU tensor t (shape (N, C, ...)) in
// the requested layout, copying (by the backend: inLayoutOn) only when t is
// stored otherwise.
func inLayout(t *tensor.Tensor, cm bool) []float32 { return storage(inLayoutOn(t, cm)) }

// The convolution and BatchNorm layers keep these layouts on every device:
// their backend capabilities (tensor.ConvBackend, tensor.BatchNormBackend)
// read and write dense operands in NCHW or CNHW, so the helpers below only
// look at shapes and strides, never at host memory, except where the arena
// of the CPU is involved.

// densePlanes returns t dense in memory and whether it is channel-major:
// t itself when it is NCHW or CNHW, else a contiguous (NCHW) copy.
func densePlanes(t *tensor.Tensor) (*tensor.Tensor, bool) {
	if t.IsContiguous() {
		return t, false
	}
	if isCNHW(t) {
		return t, true
	}
	return t.Contiguous(), false
}

// swapAxes returns the permutation exchanging axes 0 and 1 of a rank-n
// tensor.
func swapAxes(n int) []int {
	axes := make([]int, n)
	for i := range axes {
		axes[i] = i
	}
	axes[0], axes[1] = 1, 0
	return axes
}

// inLayoutOn returns t (shape (N, C, ...)) dense in the requested layout
// on its own device: t itself when it already is, else a copy made by
// the backend.
func inLayoutOn(t *tensor.Tensor, cm bool) *tensor.Tensor {
	if t.NDim() < 2 {
		return t.Contiguous()
	}
	if !cm {
		return t.Contiguous()
	}
	if isCNHW(t) {
		return t
	}
	axes := swapAxes(t.NDim())
	return t.Permute(axes...).Contiguous().Permute(axes...)
}

// act returns a tensor of the given shape (N, C, ...) on dev in the
// requested layout, from the arena (arbitrary contents, see Arena.tensor
// and Arena.devTensor; zero for a nil arena).
func (a *Arena) act(dev tensor.Device, cm bool, shape ...int) *tensor.Tensor {
	if dev == tensor.CPU || dev == "" {
		return a.tensor(cm, shape...)
	}
	if !cm || len(shape) < 2 {
		return a.devTensor(dev, shape...)
	}
	perm := append([]int{shape[1], shape[0]}, shape[2:]...)
	return a.devTensor(dev, perm...).Permute(swapAxes(len(shape))...)
}

// actGrad returns out's gradient in a backward closure, dense in the
// memory layout of out's value (channelMajor), on any device.
func (a *Arena) actGrad(out *autograd.Var) *tensor.Tensor {
	return inLayoutOn(out.Grad, channelMajor(out.Value))
}

// actGradSlot returns v's gradient dense in the memory layout of v's value
// (channelMajor), on any device, creating it when v has none (from the
// arena on the CPU: then with arbitrary contents), and whether the caller
// must add into it (acc) or may overwrite it (false: fresh). A gradient
// stored otherwise is first copied to that layout by the backend. It
// returns nil when v needs no gradient.
func (a *Arena) actGradSlot(v *autograd.Var) (*tensor.Tensor, bool) {
	if !v.RequiresGrad {
		return nil, false
	}
	cm := channelMajor(v.Value)
	if v.Grad == nil {
		v.Grad = a.act(v.Value.Device(), cm, v.Value.Shape()...)
		return v.Grad, false
	}
	if channelMajor(v.Grad) != cm || !(v.Grad.IsContiguous() || isCNHW(v.Grad)) {
		v.Grad = inLayoutOn(v.Grad, cm)
	}
	return v.Grad, true
}

// toLayoutOn returns v stored channel-major (cm) or NCHW, on any device:
// v itself when it already is, otherwise a copy (from the arena on the
// CPU, made by the backend) whose gradient flows back to v.
func (a *Arena) toLayoutOn(tp *autograd.Tape, v *autograd.Var, cm bool) *autograd.Var {
	if _, vcm := densePlanes(v.Value); vcm == cm && (cm || v.Value.IsContiguous()) {
		return v
	}
	y := a.act(v.Value.Device(), cm, v.Value.Shape()...)
	tensor.CopyInto(y, v.Value)
	return tp.Record(y, func(out *autograd.Var) {
		defer a.release(out.Grad)
		addGrad(v, out.Grad)
	}, v)
}
