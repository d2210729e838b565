package nn

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/tensor"
)

// Conv2d is a 2-d convolution over (N, C, H, W) inputs with square kernels,
// stride and zero padding, PyTorch's nn.Conv2d (groups 1, dilation 1).
// Members: weight (Out, In, K, K), bias (Out) when present.
//
// Its output is stored channel-major (see layout.go): call Contiguous
// before Data. The passes are kernels/conv's: im2col + GEMM (a 1x1
// stride-1 unpadded convolution multiplies the input itself; the input
// gradient is a transposed convolution at stride 1, else GEMM + col2im);
// 3x3 stride-1 padding-1 convolutions may use Winograd's F(2x2, 3x3)
// instead, and 3x3 padding-1 ones the direct kernels, for the forward pass
// and both gradients; Algo chooses.
type Conv2d struct {
	In, Out, Kernel, Stride, Padding int
	Weight                           *autograd.Var
	Bias                             *autograd.Var // nil without bias

	// Algo selects the algorithm of the forward and backward passes:
	// AlgoAuto (the zero value) picks by shape.
	Algo ConvAlgo

	arena *Arena
	plan  atomic.Pointer[conv.Plan] // the direct kernels' plan of the last geometry
	shape atomic.Pointer[ConvShape] // the geometry of the last call
}

// LastShape returns the geometry of the last Forward call (false before
// the first): what TuneConvs measures for a network.
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

// Forward convolves x of shape (N, In, H, W) to (N, Out, OH, OW). The
// output is stored channel-major (see layout.go); x may be in either layout.
//
// Each pass (forward, weight gradient, input gradient) runs the algorithm
// algos picks for it, through kernels/conv: the GEMM paths (the whole
// batch is one GEMM, Y (Out x N*OH*OW) = W (Out x In*K*K) times the patch
// matrix, built chunk by chunk of images; a 1x1 stride-1 convolution of a
// channel-major input multiplies the input itself), Winograd or the direct
// kernels.
func (c *Conv2d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) != 4 || shape[1] != c.In {
		panic(fmt.Sprintf("nn.Conv2d(%d, %d): input of shape %v, expected (N, %d, H, W)", c.In, c.Out, shape, c.In))
	}
	n, h, w := shape[0], shape[2], shape[3]
	k, s, p := c.Kernel, c.Stride, c.Padding
	oh, ow := conv.OutSize(h, k, s, p), conv.OutSize(w, k, s, p)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn.Conv2d: input %dx%d too small for kernel %d padding %d", h, w, k, p))
	}
	xd, xcm := planes(x.Value)
	sh := ConvShape{N: n, In: c.In, Out: c.Out, H: h, W: w, K: k, S: s, P: p, ChannelMajor: xcm || n == 1}
	ldy := n * oh * ow
	wd := c.Weight.Value.Data()
	y := c.arena.tensor(true, n, c.Out, oh, ow)
	yd := storage(y)
	if last := c.shape.Load(); last == nil || *last != sh {
		c.shape.Store(&sh)
	}
	al := c.algos(sh)
	sc := c.arena.kernelScratch()
	var pl *conv.Plan
	if al.Forward == AlgoDirect || al.WeightGrad == AlgoDirect || al.InputGrad == AlgoDirect {
		pl = c.directPlan(sh)
	}
	// The transformed kernels of a Winograd forward pass, kept for a
	// Winograd input gradient.
	var wu []float32
	switch al.Forward {
	case AlgoDirect:
		conv.DirectForward(sc, sh, pl, wd, xd, yd)
	case AlgoWinograd:
		keep := tp.Recording(x) && x.RequiresGrad && al.InputGrad == AlgoWinograd
		wu = c.winoKernels(wd, keep)
		conv.WinogradForward(sc, sh, wu, xd, yd)
		if !keep {
			c.arena.putScratch(wu)
			wu = nil
		}
	default:
		conv.Im2colForward(sc, sh, wd, xd, yd)
	}
	inputs := []*autograd.Var{x, c.Weight}
	if c.Bias != nil {
		conv.AddBias(yd, c.Bias.Value.Data(), ldy)
		inputs = append(inputs, c.Bias)
	}
	return tp.Record(y, func(out *autograd.Var) {
		defer c.arena.release(out.Grad)
		if wu != nil {
			defer c.arena.release(tensor.FromSlice(wu, len(wu)))
		}
		dy := gradOf(out)
		if c.Bias != nil {
			if db, _ := gradSlot(c.Bias); db != nil {
				conv.BiasGrad(db, dy, ldy)
			}
		}
		if dw, wacc := gradSlot(c.Weight); dw != nil {
			switch al.WeightGrad {
			case AlgoDirect:
				conv.DirectWeightGrad(sc, sh, pl, xd, dy, dw, wacc)
			case AlgoWinograd:
				conv.WinogradWeightGrad(sc, sh, xd, dy, dw, wacc)
			default:
				conv.Im2colWeightGrad(sc, sh, xd, dy, dw, wacc)
			}
		}
		dx, xacc := c.arena.gradSlot(x)
		if dx == nil {
			return
		}
		switch al.InputGrad {
		case AlgoDirect:
			conv.DirectInputGrad(sc, sh, pl, wd, dy, dx, xacc)
		case AlgoWinograd:
			if wu == nil {
				wu = c.winoKernels(wd, false)
				defer c.arena.putScratch(wu)
			}
			conv.WinogradInputGrad(sc, sh, wu, dy, dx, xacc)
		default:
			conv.Im2colInputGrad(sc, sh, wd, dy, dx, xacc)
		}
	}, inputs...)
}

// directPlan returns kernels/conv's plan for s, kept in c for the next
// call of the same geometry.
func (c *Conv2d) directPlan(s ConvShape) *conv.Plan {
	if pl := c.plan.Load(); pl != nil && pl.H() == s.H && pl.W() == s.W && pl.Stride() == s.S {
		return pl
	}
	pl := conv.NewPlan(s.H, s.W, s.S)
	c.plan.Store(pl)
	return pl
}

// winoKernels returns the transformed kernels of the (Out, In, 3, 3)
// weight wd (conv.WinogradKernels): on a buffer valid until the arena's
// Reset (or its release) when keep, for the backward pass, else on
// scratch.
func (c *Conv2d) winoKernels(wd []float32, keep bool) []float32 {
	n := conv.WinogradKernelsLen(c.Out, c.In)
	var u []float32
	if keep {
		u = c.arena.get(n)
	} else {
		u = c.arena.getScratch(n)
	}
	conv.WinogradKernels(u, wd, c.Out, c.In)
	return u
}
