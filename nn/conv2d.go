package nn

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/tensor"

	"github.com/duel-ssl/duel/kernels/vecmath"
)

// Conv2d is a 2-d convolution over (N, C, H, W) inputs with square kernels,
// stride and zero padding, PyTorch's nn.Conv2d (groups 1, dilation 1).
// Members: weight (Out, In, K, K), bias (Out) when present.
//
// Its output is stored channel-major (see layout.go): call Contiguous
// before Data. The forward pass is a GEMM of the weight (Out x In*K*K) with
// the patch matrix of the whole batch (im2col, In*K*K x N*OH*OW, built in
// chunks of images); a 1x1 stride-1 unpadded convolution multiplies the
// input itself. The backward pass is a GEMM for the weight gradient and, for
// stride 1, a transposed convolution (im2col of the output gradient + GEMM)
// for the input gradient, else GEMM + col2im. 3x3 stride-1 padding-1
// convolutions may use Winograd's F(2x2, 3x3) instead (winograd.go,
// winograd_grad.go) or the direct kernels of kernels/conv (conv_direct.go)
// for the forward pass and both gradients; Algo chooses.
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

// pointwise reports whether the patch matrix is the input itself (a 1x1
// stride-1 unpadded convolution).
func (c *Conv2d) pointwise() bool { return c.Kernel == 1 && c.Stride == 1 && c.Padding == 0 }

// Chunking of the patch matrix. The batch is processed in chunks of images
// whose patch matrix (In*K*K x images*OH*OW) holds about colBudget floats
// per 64 output channels (2 MB for a 64-channel layer: it stays in cache
// between im2col and the GEMM's packing, which matters for narrow layers
// with only 2*Out flops per patch element; wide layers take larger chunks
// and fewer GEMM calls), but at least minChunkCols columns: a GEMM with
// fewer columns is inefficient, and the weight-gradient GEMM reads and
// writes all of dW once per chunk.
const (
	colBudget    = 1 << 19
	minChunkCols = 1024
)

// convGeom is the geometry of one Conv2d call.
type convGeom struct {
	n, cin, h, w, cout, k, s, p, oh, ow int
	xcm                                 bool // input stored channel-major
	// winoGeneral makes the Winograd transforms take their general path on
	// 4x4 maps too, and the input and output transforms their row-by-row
	// paths on wide maps (tests compare them with the unrolled and
	// whole-map ones).
	winoGeneral bool
}

func (g convGeom) ckk() int { return g.cin * g.k * g.k }
func (g convGeom) ohw() int { return g.oh * g.ow }

// image returns the offset of image i in the input and the channel stride.
func (g convGeom) image(i int) (off, cs int) {
	if g.xcm {
		return i * g.h * g.w, g.n * g.h * g.w
	}
	return i * g.cin * g.h * g.w, g.h * g.w
}

// flops returns the flops of one GEMM of the convolution over the batch.
func (g convGeom) flops() float64 {
	return 2 * float64(g.cout) * float64(g.ckk()) * float64(g.n*g.ohw())
}

// chunk returns how many images one patch matrix holds.
func (g convGeom) chunk() int {
	cols := max(minChunkCols, colBudget*max(1, g.cout/64)/max(g.ckk(), 1))
	return max(1, min(g.n, (cols+g.ohw()-1)/g.ohw()))
}

// im2colImages writes the patch matrix of images [n0, n0+cnt) into col
// (ckk x cnt*ohw); when par, over several goroutines, each taking a range
// of (image, input channel) pairs: a chunk may hold a single image.
func (g convGeom) im2colImages(col, xd []float32, n0, cnt int, par bool) {
	ld := cnt * g.ohw()
	kk := g.k * g.k
	w := 1
	if par {
		w = workers(g.ckk() * ld)
	}
	parallelFor(cnt*g.cin, w, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			j, ci := t/g.cin, t%g.cin
			off, cs := g.image(n0 + j)
			im2col(col[ci*kk*ld+j*g.ohw():], ld, xd[off+ci*cs:], cs, 1, g.h, g.w, g.k, g.k, g.s, g.p)
		}
	})
}

// col2imImages adds the patch-matrix gradient dcol of images [n0, n0+cnt)
// into dx; when par, over several goroutines by (image, input channel)
// pairs.
func (g convGeom) col2imImages(dx, dcol []float32, n0, cnt int, par bool) {
	ld := cnt * g.ohw()
	kk := g.k * g.k
	w := 1
	if par {
		w = workers(g.ckk() * ld)
	}
	parallelFor(cnt*g.cin, w, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			j, ci := t/g.cin, t%g.cin
			off, cs := g.image(n0 + j)
			col2im(dx[off+ci*cs:], cs, dcol[ci*kk*ld+j*g.ohw():], ld, 1, g.h, g.w, g.k, g.k, g.s, g.p)
		}
	})
}

// Forward convolves x of shape (N, In, H, W) to (N, Out, OH, OW). The
// output is stored channel-major (see layout.go); x may be in either layout.
//
// Each pass (forward, weight gradient, input gradient) runs the algorithm
// algos picks for it: the GEMM paths (conv_gemm.go: the whole batch is one
// GEMM, Y (Out x N*OH*OW) = W (Out x In*K*K) times the patch matrix, built
// chunk by chunk of images; a 1x1 stride-1 convolution of a channel-major
// input multiplies the input itself), Winograd or the direct kernels.
func (c *Conv2d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) != 4 || shape[1] != c.In {
		panic(fmt.Sprintf("nn.Conv2d(%d, %d): input of shape %v, expected (N, %d, H, W)", c.In, c.Out, shape, c.In))
	}
	n, h, w := shape[0], shape[2], shape[3]
	k, s, p := c.Kernel, c.Stride, c.Padding
	oh, ow := ConvOutSize(h, k, s, p), ConvOutSize(w, k, s, p)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn.Conv2d: input %dx%d too small for kernel %d padding %d", h, w, k, p))
	}
	xd, xcm := planes(x.Value)
	g := convGeom{n: n, cin: c.In, h: h, w: w, cout: c.Out, k: k, s: s, p: p, oh: oh, ow: ow, xcm: xcm || n == 1}
	ldy := n * g.ohw()
	wd := c.Weight.Value.Data()
	y := c.arena.tensor(true, n, c.Out, oh, ow)
	yd := storage(y)
	if s := c.shape.Load(); s == nil || *s != shapeOf(g) {
		sh := shapeOf(g)
		c.shape.Store(&sh)
	}
	al := c.algos(g)
	var pl *conv.Plan
	if al.fwd == AlgoDirect || al.dw == AlgoDirect || al.dx == AlgoDirect {
		pl = c.directPlan(g)
	}
	// The transformed kernels of a Winograd forward pass, kept for a
	// Winograd input gradient.
	var wu []float32
	switch al.fwd {
	case AlgoDirect:
		c.directForward(g, pl, wd, xd, yd)
	case AlgoWinograd:
		keep := tp.Recording(x) && x.RequiresGrad && al.dx == AlgoWinograd
		wu = c.winoKernels(wd, keep)
		c.winoConv(g, wu, false, xd, yd, true, false)
		if !keep {
			c.arena.putScratch(wu)
			wu = nil
		}
	default:
		c.gemmForward(g, wd, xd, yd)
	}
	inputs := []*autograd.Var{x, c.Weight}
	if c.Bias != nil {
		b := c.Bias.Value.Data()
		for ch := range c.Out {
			row := yd[ch*ldy : (ch+1)*ldy]
			for j := range row {
				row[j] += b[ch]
			}
		}
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
				for ch := range c.Out {
					db[ch] += vecmath.Sum(dy[ch*ldy : (ch+1)*ldy])
				}
			}
		}
		if dw, wacc := gradSlot(c.Weight); dw != nil {
			switch al.dw {
			case AlgoDirect:
				c.directWeightGrad(g, pl, xd, dy, dw, wacc)
			case AlgoWinograd:
				c.winoWeightGrad(g, xd, dy, dw, wacc)
			default:
				c.gemmWeightGrad(g, xd, dy, dw, wacc)
			}
		}
		dx, xacc := c.arena.gradSlot(x)
		if dx == nil {
			return
		}
		switch al.dx {
		case AlgoDirect:
			c.directInputGrad(g, pl, wd, dy, dx, xacc)
		case AlgoWinograd:
			if wu == nil {
				wu = c.winoKernels(wd, false)
				defer c.arena.putScratch(wu)
			}
			c.inputGradWinograd(g, wu, dy, dx, xacc)
		default:
			c.gemmInputGrad(g, wd, dy, dx, xacc)
		}
	}, inputs...)
}
