package nn

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// MaxPool2d takes the maximum over square windows of (N, C, H, W) inputs,
// PyTorch's nn.MaxPool2d (padding counts as -inf, floor mode).
// The passes are its backend's tensor.PoolBackend (kernels/pool's on the
// CPU).
type MaxPool2d struct {
	Kernel, Stride, Padding int

	arena *Arena
}

// SetArena makes the layer allocate from a.
func (mp *MaxPool2d) SetArena(a *Arena) { mp.arena = a }

// NewMaxPool2d returns a max-pooling layer.
func NewMaxPool2d(kernel, stride, padding int) *MaxPool2d {
	if kernel <= 0 || stride <= 0 || padding < 0 || 2*padding > kernel {
		panic(fmt.Sprintf("nn.NewMaxPool2d: bad geometry kernel=%d stride=%d padding=%d", kernel, stride, padding))
	}
	return &MaxPool2d{Kernel: kernel, Stride: stride, Padding: padding}
}

// Members returns nil.
func (*MaxPool2d) Members() []Member { return nil }

// Forward pools x of shape (N, C, H, W).
func (mp *MaxPool2d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) != 4 {
		panic(fmt.Sprintf("nn.MaxPool2d: input of shape %v, expected (N, C, H, W)", shape))
	}
	n, c, h, w := shape[0], shape[1], shape[2], shape[3]
	k, s, p := mp.Kernel, mp.Stride, mp.Padding
	oh, ow := tensor.ConvOutSize(h, k, s, p), tensor.ConvOutSize(w, k, s, p)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn.MaxPool2d: input %dx%d too small for kernel %d", h, w, k))
	}
	xv, cm := planesOf(x.Value)
	pb := poolOf("MaxPool2d", xv)
	y := mp.arena.tensorOn(xv.Device(), cm, n, c, oh, ow)
	// arg holds, on x's backend, for each output the index of its maximum
	// inside the plane (int32 bits: tensor.PoolBackend).
	arg := mp.arena.tensorOn(xv.Device(), false, n*c*oh*ow)
	g := tensor.PoolGeom{Planes: n * c, H: h, W: w, OH: oh, OW: ow}
	argOp := memOp(arg, g.Planes, oh, ow)
	pb.MaxPool2d(memOp(y, g.Planes, oh, ow), memOp(xv, g.Planes, h, w), argOp, g, k, s, p)
	if !tp.Recording(x) {
		releaseIndices(mp.arena, arg) // no backward pass will read them
	}
	return tp.Record(y, func(out *autograd.Var) {
		defer mp.arena.release(out.Grad)
		defer releaseIndices(mp.arena, arg)
		dy := gradIn(out)
		dx, acc := mp.arena.gradTensor(x)
		if dx == nil {
			return
		}
		pb.MaxPool2dBack(memOp(dx, g.Planes, h, w), memOp(dy, g.Planes, oh, ow), argOp, g, k, s, p, acc)
	}, x)
}

// AdaptiveAvgPool2d averages (N, C, H, W) inputs over an OutH x OutW grid of
// windows, PyTorch's nn.AdaptiveAvgPool2d: window i spans
// [floor(i*H/OutH), ceil((i+1)*H/OutH)).
// The passes are its backend's tensor.PoolBackend (kernels/pool's on the
// CPU).
type AdaptiveAvgPool2d struct {
	OutH, OutW int

	arena *Arena
}

// SetArena makes the layer allocate from a.
func (ap *AdaptiveAvgPool2d) SetArena(a *Arena) { ap.arena = a }

// NewAdaptiveAvgPool2d returns an adaptive average-pooling layer; (1, 1) is
// global average pooling.
func NewAdaptiveAvgPool2d(outH, outW int) *AdaptiveAvgPool2d {
	if outH <= 0 || outW <= 0 {
		panic(fmt.Sprintf("nn.NewAdaptiveAvgPool2d: bad output size %dx%d", outH, outW))
	}
	return &AdaptiveAvgPool2d{OutH: outH, OutW: outW}
}

// Members returns nil.
func (*AdaptiveAvgPool2d) Members() []Member { return nil }

// Forward pools x of shape (N, C, H, W) to (N, C, OutH, OutW).
func (ap *AdaptiveAvgPool2d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) != 4 {
		panic(fmt.Sprintf("nn.AdaptiveAvgPool2d: input of shape %v, expected (N, C, H, W)", shape))
	}
	n, c, h, w := shape[0], shape[1], shape[2], shape[3]
	oh, ow := ap.OutH, ap.OutW
	xv, cm := planesOf(x.Value)
	pb := poolOf("AdaptiveAvgPool2d", xv)
	y := ap.arena.tensorOn(xv.Device(), cm, n, c, oh, ow)
	g := tensor.PoolGeom{Planes: n * c, H: h, W: w, OH: oh, OW: ow}
	pb.AdaptiveAvgPool2d(memOp(y, g.Planes, oh, ow), memOp(xv, g.Planes, h, w), g)
	return tp.Record(y, func(out *autograd.Var) {
		defer ap.arena.release(out.Grad)
		dy := gradIn(out)
		dx, acc := ap.arena.gradTensor(x)
		if dx == nil {
			return
		}
		pb.AdaptiveAvgPool2dBack(memOp(dx, g.Planes, h, w), memOp(dy, g.Planes, oh, ow), g, acc)
	}, x)
}

// releaseIndices gives back the indices of a max pooling once its backward
// pass ran: to the arena they came from (on any device: the arena hands
// them out again, so they must not go back to the backend), else, on a
// device, to the backend's cache (tensor.Releaser) rather than waiting for
// the garbage collector.
func releaseIndices(a *Arena, arg *tensor.Tensor) {
	if a != nil || onHost(arg) {
		a.release(arg)
		return
	}
	arg.Release()
}

// poolOf returns the tensor.PoolBackend of t's backend. The pooling layers
// have no composition of core operations: a backend without the capability
// cannot run them, and poolOf panics naming it.
func poolOf(layer string, t *tensor.Tensor) tensor.PoolBackend {
	b := t.Backend()
	pb, ok := b.(tensor.PoolBackend)
	if !ok {
		panic(fmt.Sprintf("nn.%s: backend %q has no tensor.PoolBackend (the pooling layers need it)", layer, b.Name()))
	}
	return pb
}
