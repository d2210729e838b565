package conv

import "github.com/duel-ssl/duel/kernels/gemm"

// Shape is the geometry of a convolution call: batch, channels, input
// map, kernel, stride, padding, and whether the input is channel-major.
// The passes of this package (Im2colForward, WinogradForward,
// DirectForward, ...) take the input in either layout (NCHW, or
// channel-major CNHW when ChannelMajor) and write and read the output and
// its gradient channel-major (Out planes of N*OH*OW floats).
type Shape struct {
	N, In, Out, H, W, K, S, P int
	ChannelMajor              bool
}

// OutH returns the height of the output maps.
func (s Shape) OutH() int { return OutSize(s.H, s.K, s.S, s.P) }

// OutW returns the width of the output maps.
func (s Shape) OutW() int { return OutSize(s.W, s.K, s.S, s.P) }

// geom returns the geom of s (a single image is both layouts: read as
// channel-major).
func (s Shape) geom() geom {
	oh, ow := s.OutH(), s.OutW()
	return geom{n: s.N, cin: s.In, h: s.H, w: s.W, cout: s.Out, k: s.K, s: s.S, p: s.P, oh: oh, ow: ow, xcm: s.ChannelMajor || s.N == 1}
}

// geomBF16 is s's geometry with the GEMM paths in bfloat16.
func (s Shape) geomBF16() geom {
	g := s.geom()
	g.bf16 = true
	return g
}

// gemm returns the GEMM the paths of g call where coarsePlan chose sg:
// its bfloat16 form (threaded when par, as coarsePlan's Sgemm is) when
// g.bf16, else sg.
func (g geom) gemm(sg sgemmFunc, par bool) sgemmFunc {
	switch {
	case !g.bf16:
		return sg
	case par:
		return gemm.SgemmBF16
	}
	return gemm.SgemmBF16Serial
}

// pointwise reports whether the patch matrix is the input itself (a 1x1
// stride-1 unpadded convolution).
func (g geom) pointwise() bool { return g.k == 1 && g.s == 1 && g.p == 0 }

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

// geom is the geometry of one convolution call, as the passes use it.
type geom struct {
	n, cin, h, w, cout, k, s, p, oh, ow int
	xcm                                 bool // input stored channel-major
	// winoGeneral makes the Winograd transforms take their general path on
	// 4x4 maps too, and the input and output transforms their row-by-row
	// paths on wide maps (tests compare them with the unrolled and
	// whole-map ones).
	winoGeneral bool
	// bf16: the GEMM paths multiply factors rounded to bfloat16
	// (gemm.SgemmBF16) on an explicit patch matrix (Im2colBF16).
	bf16 bool
	// pairing overrides whether the bfloat16 GEMM paths pair their
	// operands (pairedBF16), for tests: pairAuto in every other use.
	pairing pairMode
}

// pairMode says when the bfloat16 GEMM paths take the paired form.
type pairMode int8

const (
	pairAuto   pairMode = iota // where the CPU has AVX512_BF16
	pairAlways                 // everywhere (the paired product then unpacks the words)
	pairNever                  // never: the float32 patch matrix and gemm.SgemmBF16
)

func (g geom) ckk() int { return g.cin * g.k * g.k }
func (g geom) ohw() int { return g.oh * g.ow }

// image returns the offset of image i in the input and the channel stride.
func (g geom) image(i int) (off, cs int) {
	if g.xcm {
		return i * g.h * g.w, g.n * g.h * g.w
	}
	return i * g.cin * g.h * g.w, g.h * g.w
}

// flops returns the flops of one GEMM of the convolution over the batch.
func (g geom) flops() float64 {
	return 2 * float64(g.cout) * float64(g.ckk()) * float64(g.n*g.ohw())
}

// chunk returns how many images one patch matrix holds.
func (g geom) chunk() int {
	cols := max(minChunkCols, colBudget*max(1, g.cout/64)/max(g.ckk(), 1))
	return max(1, min(g.n, (cols+g.ohw()-1)/g.ohw()))
}

// im2colImages writes the patch matrix of images [n0, n0+cnt) into col
// (ckk x cnt*ohw); when par, over several goroutines, each taking a range
// of (image, input channel) pairs: a chunk may hold a single image.
func (g geom) im2colImages(col, xd []float32, n0, cnt int, par bool) {
	g.im2colImagesLd(col, cnt*g.ohw(), xd, n0, cnt, par)
}

// im2colImagesLd is im2colImages with the patch matrix's rows ld apart
// (ld >= cnt*ohw).
func (g geom) im2colImagesLd(col []float32, ld int, xd []float32, n0, cnt int, par bool) {
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
func (g geom) col2imImages(dx, dcol []float32, n0, cnt int, par bool) {
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
