package nn

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/tensor"
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
	plan  atomic.Pointer[conv.Plan] // the direct kernels' plan of the last map size
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

// direct reports whether the patch matrix is the input itself.
func (c *Conv2d) direct() bool { return c.Kernel == 1 && c.Stride == 1 && c.Padding == 0 }

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
// The whole batch is one GEMM: Y (Out x N*OH*OW) = W (Out x In*K*K) times
// the patch matrix (In*K*K x N*OH*OW), built chunk by chunk of images (a 1x1
// stride-1 convolution of a channel-major input multiplies the input itself).
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
	ckk, ohw := g.ckk(), g.ohw()
	ldy := n * ohw
	wd := c.Weight.Value.Data()
	y := c.arena.tensor(true, n, c.Out, oh, ow)
	yd := storage(y)
	direct := c.direct() && g.xcm
	d3 := c.direct3x3(g)
	wino := !d3 && c.winograd(g)
	var pl *conv.Plan
	// The transformed kernels of a Winograd forward pass, kept for the
	// input gradient.
	var wu []float32
	switch {
	case d3:
		pl = c.directPlan(g)
		c.directForward(g, pl, wd, xd, yd)
	case wino:
		keep := tp.Recording(x) && x.RequiresGrad
		wu = c.winoKernels(wd, keep)
		c.winoConv(g, wu, false, xd, yd, true, false)
		if !keep {
			c.arena.putScratch(wu)
			wu = nil
		}
	case direct:
		chunk, threads, sg, _ := coarsePlan(n, n, g.flops())
		runChunks(n, chunk, threads, false, func(_, n0, cnt int) {
			sg(false, false, c.Out, cnt*ohw, c.In, 1, wd, c.In, xd[n0*ohw:], ldy, 0, yd[n0*ohw:], ldy)
		})
	default:
		chunk, threads, sg, par := coarsePlan(n, g.chunk(), g.flops())
		cols := scratchSet(c.arena, threads, ckk*chunk*ohw)
		runChunks(n, chunk, threads, false, func(w, n0, cnt int) {
			g.im2colImages(cols[w], xd, n0, cnt, par)
			sg(false, false, c.Out, cnt*ohw, ckk, 1, wd, ckk, cols[w], cnt*ohw, 0, yd[n0*ohw:], ldy)
		})
		putScratchSet(c.arena, cols)
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
					db[ch] += sum8(dy[ch*ldy : (ch+1)*ldy])
				}
			}
		}
		dw, wacc := gradSlot(c.Weight)
		dx, xacc := c.arena.gradSlot(x)
		if d3 {
			if dw != nil {
				c.directWeightGrad(g, pl, xd, dy, dw, wacc)
			}
			if dx != nil {
				c.directInputGrad(g, pl, wd, dy, dx, xacc)
			}
			return
		}
		if direct {
			if dw != nil {
				chunk, threads, sg, _ := coarsePlan(n, n, g.flops())
				c.weightGrad(dw, wacc, false, n, chunk, threads, func(w, n0, cnt int, dst []float32, b float32) {
					sg(false, true, c.Out, c.In, cnt*ohw, 1, dy[n0*ohw:], ldy, xd[n0*ohw:], ldy, b, dst, c.In)
				})
			}
			if dx != nil {
				chunk, threads, sg, _ := coarsePlan(n, n, g.flops())
				runChunks(n, chunk, threads, false, func(_, n0, cnt int) {
					sg(true, false, c.In, cnt*ohw, c.Out, 1, wd, c.In, dy[n0*ohw:], ldy, beta(xacc), dx[n0*ohw:], ldy)
				})
			}
			return
		}
		if dw != nil && c.winogradWeightGrad(g) {
			c.winoWeightGrad(g, xd, dy, dw, wacc)
		} else if dw != nil {
			chunk, threads, sg, par := coarsePlan(n, g.chunk(), g.flops())
			cols := scratchSet(c.arena, threads, ckk*chunk*ohw)
			trans := g.transposedWeightGrad()
			c.weightGrad(dw, wacc, trans, n, chunk, threads, func(w, n0, cnt int, dst []float32, b float32) {
				ld := cnt * ohw
				g.im2colImages(cols[w], xd, n0, cnt, par)
				if trans {
					sg(false, true, ckk, c.Out, ld, 1, cols[w], ld, dy[n0*ohw:], ldy, b, dst, c.Out)
					return
				}
				sg(false, true, c.Out, ckk, ld, 1, dy[n0*ohw:], ldy, cols[w], ld, b, dst, ckk)
			})
			putScratchSet(c.arena, cols)
		}
		if dx == nil {
			return
		}
		if wino {
			c.inputGradWinograd(g, wu, dy, dx, xacc)
			return
		}
		if s == 1 && g.xcm && 2*p <= k-1 {
			c.inputGradTransposed(g, wd, dy, dx, xacc)
			return
		}
		if !xacc {
			clear(dx)
		}
		chunk, threads, sg, par := coarsePlan(n, g.chunk(), g.flops())
		dcols := scratchSet(c.arena, threads, ckk*chunk*ohw)
		runChunks(n, chunk, threads, false, func(w, n0, cnt int) {
			ld := cnt * ohw
			sg(true, false, ckk, ld, c.Out, 1, wd, ckk, dy[n0*ohw:], ldy, 0, dcols[w], ld)
			g.col2imImages(dx, dcols[w], n0, cnt, par)
		})
		putScratchSet(c.arena, dcols)
	}, inputs...)
}

// inputGradTransposed computes the input gradient of a stride-1 convolution
// as the convolution of dy with the flipped, transposed kernel and padding
// k-1-p: one GEMM per chunk of images into dx (channel-major), with no
// scatter-add.
func (c *Conv2d) inputGradTransposed(g convGeom, wd, dy, dx []float32, acc bool) {
	k := g.k
	kk := k * k
	// wt[ci][co][a][b] = w[co][ci][k-1-a][k-1-b]: an (In x Out*K*K) matrix.
	wt := c.arena.getScratch(g.cin * g.cout * kk)
	defer c.arena.putScratch(wt)
	for co := range g.cout {
		for ci := range g.cin {
			src := wd[(co*g.cin+ci)*kk:][:kk]
			dst := wt[(ci*g.cout+co)*kk:][:kk]
			for j := range kk {
				dst[j] = src[kk-1-j]
			}
		}
	}
	// The transposed convolution maps (Out, OH, OW) back to (In, H, W).
	tg := convGeom{n: g.n, cin: g.cout, h: g.oh, w: g.ow, cout: g.cin, k: k, s: 1, p: k - 1 - g.p, oh: g.h, ow: g.w, xcm: true}
	ckk, hw, ld := tg.ckk(), g.h*g.w, g.n*g.h*g.w
	chunk, threads, sg, par := coarsePlan(g.n, tg.chunk(), tg.flops())
	cols := scratchSet(c.arena, threads, ckk*chunk*hw)
	defer putScratchSet(c.arena, cols)
	runChunks(g.n, chunk, threads, false, func(w, n0, cnt int) {
		tg.im2colImages(cols[w], dy, n0, cnt, par)
		sg(false, false, g.cin, cnt*hw, ckk, 1, wt, ckk, cols[w], cnt*hw, beta(acc), dx[n0*hw:], ld)
	})
}

// transposedWeightGrad reports whether the weight gradient is computed
// transposed, dW^T (In*K*K x Out) = col * dy^T, which reads the patch matrix
// as the A operand instead of transposing it into packed B panels (one
// thread: 64 x 576 x 1024 went from 87 to 98 GFLOP/s, 128 x 1152 x 1024
// from 82 to 93). The transposed result is added into dW at the end, which
// pays only when the batch has many output positions per weight, and the
// 32-wide tile wants a multiple of 32 output channels.
func (g convGeom) transposedWeightGrad() bool {
	return g.cout%32 == 0 && g.n*g.ohw() >= 4096
}

// weightGrad accumulates the weight gradient over the chunks of the batch
// into dw (added to it when acc): gemmChunk(w, n0, cnt, dst, beta) runs
// goroutine w's GEMM of images [n0, n0+cnt) into dst with the given beta.
// Goroutine 0 accumulates into dw itself, the others into private buffers
// that are added to dw at the end; when trans, every goroutine accumulates
// the transposed gradient (In*K*K x Out) into a private buffer. The chunks
// are assigned statically, so the sums do not depend on timing.
func (c *Conv2d) weightGrad(dw []float32, acc, trans bool, n, chunk, threads int, gemmChunk func(w, n0, cnt int, dst []float32, b float32)) {
	parts := make([][]float32, threads)
	used := make([]bool, threads)
	for w := range parts {
		if w == 0 && !trans {
			parts[0], used[0] = dw, acc
			continue
		}
		parts[w] = c.arena.getScratch(len(dw))
	}
	runChunks(n, chunk, threads, true, func(w, n0, cnt int) {
		gemmChunk(w, n0, cnt, parts[w], beta(used[w]))
		used[w] = true
	})
	if trans {
		first := !acc
		for w, part := range parts {
			if used[w] {
				addTransposed(dw, part, c.Out, len(dw)/c.Out, first)
				first = false
			}
			c.arena.putScratch(part)
		}
		if first {
			clear(dw)
		}
		return
	}
	if !used[0] {
		clear(dw)
	}
	for w := 1; w < threads; w++ {
		if used[w] {
			gemm.Saxpy(1, parts[w], dw)
		}
		c.arena.putScratch(parts[w])
	}
}

// addTransposed adds src^T (src is cols x rows) into dst (rows x cols), or
// stores it when overwrite, in 32 x 32 blocks.
func addTransposed(dst, src []float32, rows, cols int, overwrite bool) {
	const blk = 32
	for i0 := 0; i0 < rows; i0 += blk {
		for j0 := 0; j0 < cols; j0 += blk {
			for i := i0; i < min(i0+blk, rows); i++ {
				d := dst[i*cols : (i+1)*cols]
				for j := j0; j < min(j0+blk, cols); j++ {
					if overwrite {
						d[j] = src[j*rows+i]
					} else {
						d[j] += src[j*rows+i]
					}
				}
			}
		}
	}
}
