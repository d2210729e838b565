package nn

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// Conv2d is a 2-d convolution over (N, C, H, W) inputs with square kernels,
// stride and zero padding, PyTorch's nn.Conv2d (groups 1, dilation 1).
// Members: weight (Out, In, K, K), bias (Out) when present.
//
// Its output is stored channel-major (see layout.go): call Contiguous
// before Data. The passes are its backend's tensor.ConvBackend; on the CPU
// kernels/conv's: im2col + GEMM (a 1x1 stride-1 unpadded convolution
// multiplies the input itself; the input gradient is a transposed
// convolution at stride 1, else GEMM + col2im); 3x3 stride-1 padding-1
// convolutions may use Winograd's F(2x2, 3x3) instead, and 3x3 padding-1
// ones the direct kernels, for the forward pass and both gradients; the
// backend chooses, honouring Algo.
type Conv2d struct {
	In, Out, Kernel, Stride, Padding int
	Weight                           *autograd.Var
	Bias                             *autograd.Var // nil without bias

	// Algo selects the algorithm of the forward and backward passes:
	// AlgoAuto (the zero value) picks by shape.
	Algo ConvAlgo

	arena *Arena
	shape atomic.Pointer[ConvShape] // the geometry of the last call
}

// LastShape returns the geometry of the last Forward call (false before
// the first): what kernels/conv.Tune measures for a network.
func (c *Conv2d) LastShape() (ConvShape, bool) {
	if s := c.shape.Load(); s != nil {
		return *s, true
	}
	return ConvShape{}, false
}

// SetArena makes the layer allocate from a.
func (c *Conv2d) SetArena(a *Arena) { c.arena = a }

// NewConv2d returns a convolution with PyTorch's default initialisation
// drawn from r.
func NewConv2d(in, out, kernel, stride, padding int, bias bool, r *rand.Rand) *Conv2d {
	if in <= 0 || out <= 0 || kernel <= 0 || stride <= 0 || padding < 0 {
		panic(fmt.Sprintf("nn.NewConv2d: bad geometry in=%d out=%d kernel=%d stride=%d padding=%d", in, out, kernel, stride, padding))
	}
	c := &Conv2d{In: in, Out: out, Kernel: kernel, Stride: stride, Padding: padding,
		Weight: autograd.Param(tensor.New(out, in, kernel, kernel), "weight")}
	var b *tensor.Tensor
	if bias {
		b = tensor.New(out)
		c.Bias = autograd.Param(b, "bias")
	}
	DefaultInit(c.Weight.Value, b, r)
	return c
}

// Members returns weight and bias.
func (c *Conv2d) Members() []Member {
	ms := []Member{{Name: "weight", Param: c.Weight}}
	if c.Bias != nil {
		ms = append(ms, Member{Name: "bias", Param: c.Bias})
	}
	return ms
}

// Forward convolves x of shape (N, In, H, W) to (N, Out, OH, OW) on x's
// device, through its backend's tensor.ConvBackend (a backend without it
// cannot run the layer: Forward panics naming it). The output is stored
// channel-major (see layout.go); x may be in either layout.
//
// The backend picks the algorithm of each pass (forward, weight gradient,
// input gradient) for the shape, honouring c.Algo; on the CPU these are
// kernels/conv's: the GEMM paths (the whole batch is one GEMM, Y (Out x
// N*OH*OW) = W (Out x In*K*K) times the patch matrix, built chunk by chunk
// of images; a 1x1 stride-1 convolution of a channel-major input
// multiplies the input itself), Winograd or the direct kernels.
func (c *Conv2d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) != 4 || shape[1] != c.In {
		panic(fmt.Sprintf("nn.Conv2d(%d, %d): input of shape %v, expected (N, %d, H, W)", c.In, c.Out, shape, c.In))
	}
	n, h, w := shape[0], shape[2], shape[3]
	k, s, p := c.Kernel, c.Stride, c.Padding
	oh, ow := tensor.ConvOutSize(h, k, s, p), tensor.ConvOutSize(w, k, s, p)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn.Conv2d: input %dx%d too small for kernel %d padding %d", h, w, k, p))
	}
	xv, xcm := densePlanes(x.Value)
	cb := convOf(xv)
	sh := ConvShape{N: n, In: c.In, Out: c.Out, H: h, W: w, K: k, S: s, P: p, ChannelMajor: xcm || n == 1}
	if last := c.shape.Load(); last == nil || *last != sh {
		c.shape.Store(&sh)
	}
	al := cb.ConvAlgos(sh, c.Algo)
	y := c.arena.act(xv.Device(), true, n, c.Out, oh, ow)
	xo := memOp(xv, n, c.In, h, w)
	wo := memOp(c.Weight.Value.Contiguous(), c.Out, c.In, k, k)
	inputs := []*autograd.Var{x, c.Weight}
	var bo tensor.Operand
	if c.Bias != nil {
		bo = memOp(c.Bias.Value.Contiguous(), c.Out)
		inputs = append(inputs, c.Bias)
	}
	// The backend keeps what its input gradient may reuse (the CPU's
	// transformed Winograd kernels) only when there will be one.
	keep := tp.Recording(x) && x.RequiresGrad
	saved := cb.ConvForward(memOp(y, c.Out, n, oh, ow), xo, wo, bo, sh, al, keep)
	return tp.Record(y, func(out *autograd.Var) {
		defer c.arena.release(out.Grad)
		dy := memOp(c.arena.actGrad(out), c.Out, n, oh, ow)
		if c.Bias != nil {
			if db, _ := (*Arena)(nil).gradTensor(c.Bias); db != nil {
				cb.ConvBiasGrad(memOp(db, c.Out), dy, sh)
			}
		}
		// The parameters' gradients never come from the arena: the
		// optimizer reads them after the arena is reset.
		if dw, acc := (*Arena)(nil).gradTensor(c.Weight); dw != nil {
			cb.ConvWeightGrad(memOp(dw, c.Out, c.In, k, k), dy, xo, sh, al, acc)
		}
		dx, acc := c.arena.actGradSlot(x)
		if dx == nil {
			return
		}
		cb.ConvInputGrad(memOp(dx, n, c.In, h, w), dy, wo, sh, al, saved, acc)
	}, inputs...)
}

// convOf returns the tensor.ConvBackend of t's backend. Conv2d has no
// composition of core operations: a backend without the capability cannot
// run it, and convOf panics naming it.
func convOf(t *tensor.Tensor) tensor.ConvBackend {
	b := t.Backend()
	cb, ok := b.(tensor.ConvBackend)
	if !ok {
		panic(fmt.Sprintf("nn.Conv2d: backend %q has no tensor.ConvBackend (the convolution needs it)", b.Name()))
	}
	return cb
}
