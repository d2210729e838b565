package nn

import (
	"github.com/duel-ssl/duel/kernels/conv"
)

// The direct path of Conv2d: 3x3 stride-1 padding-1 convolutions computed
// by kernels/conv straight from the channel-major planes, without a patch
// matrix (narrow layers spend as long building one as multiplying it). The
// input gradient is the same convolution of the output gradient with the
// flipped, transposed kernel; the weight gradient has its own kernel. The
// batch is split into chunks of images over goroutines (coarsePlan), the
// weight gradient statically, as weightGrad does, so that no sum depends
// on timing.

// directOK reports whether kernels/conv handles g: a 3x3 stride-1
// padding-1 convolution of maps that hold whole 16-position vectors.
func (g convGeom) directOK() bool {
	return g.k == 3 && g.s == 1 && g.p == 1 && conv.Supported(g.h, g.w)
}

// directPlan returns kernels/conv's plan for g's maps, kept in c for the
// next call of the same size.
func (c *Conv2d) directPlan(g convGeom) *conv.Plan {
	if pl := c.plan.Load(); pl != nil && pl.H() == g.h && pl.W() == g.w {
		return pl
	}
	pl := conv.NewPlan(g.h, g.w)
	c.plan.Store(pl)
	return pl
}

// directChunk returns how many images a chunk of the weight gradient
// holds (conv.ChunkPositions).
func (g convGeom) directChunk() int {
	return max(1, min(g.n, conv.ChunkPositions(g.cin)/(g.h*g.w)))
}

// planesAt returns the offset of image i in planes of c channels of hw
// floats stored channel-major (cm) or NCHW for a batch of n, and the
// stride between its channels.
func planesAt(cm bool, i, n, c, hw int) (off, ld int) {
	if cm {
		return i * hw, n * hw
	}
	return i * c * hw, hw
}

// directConv convolves the images of src (f.In() channels, layout scm)
// with the packed filter f into dst (f.Out() channels, layout dcm), adding
// to dst when acc, chunk by chunk over the goroutines.
func (c *Conv2d) directConv(g convGeom, pl *conv.Plan, f *conv.Filter, src []float32, scm bool, dst []float32, dcm, acc bool) {
	hw := g.h * g.w
	flops := 2 * 9 * float64(f.In()*f.Out()) * float64(g.n*hw)
	chunk, threads, _, _ := coarsePlan(g.n, g.n, flops)
	runChunks(g.n, chunk, threads, false, func(_, n0, cnt int) {
		if scm && dcm {
			conv.Forward(pl, f, dst[n0*hw:], g.n*hw, src[n0*hw:], g.n*hw, cnt, acc)
			return
		}
		for i := n0; i < n0+cnt; i++ {
			so, sld := planesAt(scm, i, g.n, f.In(), hw)
			do, dld := planesAt(dcm, i, g.n, f.Out(), hw)
			conv.Forward(pl, f, dst[do:], dld, src[so:], sld, 1, acc)
		}
	})
}

// directForward writes the convolution of xd (layout g.xcm) with the
// (Out, In, 3, 3) weight wd into yd (channel-major).
func (c *Conv2d) directForward(g convGeom, pl *conv.Plan, wd, xd, yd []float32) {
	buf := c.arena.getScratch(conv.FilterLen(g.cout, g.cin))
	defer c.arena.putScratch(buf)
	f := conv.PackFilter(buf, wd, g.cout, g.cin, false)
	c.directConv(g, pl, &f, xd, g.xcm, yd, true, false)
}

// directInputGrad writes (adds, when acc) the input gradient dx (layout
// g.xcm) of the convolution from the output gradient dy (channel-major).
func (c *Conv2d) directInputGrad(g convGeom, pl *conv.Plan, wd, dy, dx []float32, acc bool) {
	buf := c.arena.getScratch(conv.FilterLen(g.cin, g.cout))
	defer c.arena.putScratch(buf)
	f := conv.PackFilter(buf, wd, g.cout, g.cin, true)
	c.directConv(g, pl, &f, dy, true, dx, g.xcm, acc)
}

// directWeightGrad writes (adds, when acc) the weight gradient dw of the
// convolution of xd (layout g.xcm) from dy (channel-major).
func (c *Conv2d) directWeightGrad(g convGeom, pl *conv.Plan, xd, dy, dw []float32, acc bool) {
	hw := g.h * g.w
	chunk, threads, _, _ := coarsePlan(g.n, g.directChunk(), g.flops())
	c.weightGrad(dw, acc, false, g.n, chunk, threads, func(_, n0, cnt int, dst []float32, b float32) {
		if g.xcm {
			conv.WeightGrad(pl, dst, dy[n0*hw:], g.n*hw, xd[n0*hw:], g.n*hw, g.cout, g.cin, cnt, b != 0)
			return
		}
		for i := n0; i < n0+cnt; i++ {
			conv.WeightGrad(pl, dst, dy[i*hw:], g.n*hw, xd[i*g.cin*hw:], hw, g.cout, g.cin, 1, b != 0 || i > n0)
		}
	})
}
