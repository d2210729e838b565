package cuda

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// The backend runs the passes of a convolution with the implicit-GEMM
// kernels of kernels/cuda/conv.cu (FP32) or, in precisions tf32 and bf16,
// of conv_tc.cu (tensor cores, conv_tc.go): the whole batch is one
// product whose im2col operand is gathered from the image tile by tile,
// never stored.
var _ tensor.ConvBackend = (*Backend)(nil)

// convTile and convWideTile are the edges of the square output tiles of
// conv.cu's blocks: the 64 x 64 kernels, and the wide kernels
// (conv_*_wide_f32, 8 x 8 accumulators a thread) that a product with more
// rows than one narrow tile runs (convWide). Both sum every output
// element's terms in the same order: their results are bit for bit equal.
const (
	convTile     = 64
	convWideTile = 128
)

// convWide reports whether a product with m rows (O, or C for the input
// gradient) runs the wide kernels: a product of at most 64 rows would
// leave half of a wide tile's rows idle.
func convWide(m int) bool { return m > convTile }

// convTileOf is the tile edge of a product with m rows.
func convTileOf(m int) int {
	if convWide(m) {
		return convWideTile
	}
	return convTile
}

// ConvAlgos returns tensor.ConvIm2col for every pass whatever req asks: the
// CUDA backend has one algorithm, the implicit GEMM of conv.cu (im2col
// without the im2col matrix).
func (*Backend) ConvAlgos(s tensor.ConvShape, req tensor.ConvAlgo) tensor.ConvAlgos {
	return tensor.ConvAlgos{Forward: tensor.ConvIm2col, WeightGrad: tensor.ConvIm2col, InputGrad: tensor.ConvIm2col}
}

// convPtr returns the device address of the dense operand o of n
// elements, panicking when o is not contiguous or holds another count.
func (be *Backend) convPtr(op, name string, o tensor.Operand, n int) driver.DevicePtr {
	if got := convNumel(o.Shape); got != n {
		panic(fmt.Sprintf("cuda: Backend.%s: %s has %d elements (shape %v), want %d", op, name, got, o.Shape, n))
	}
	if !convDense(o.Shape, o.Strides) {
		panic(fmt.Sprintf("cuda: Backend.%s: %s of shape %v strides %v is not contiguous", op, name, o.Shape, o.Strides))
	}
	return be.ptr(op, o.Buf, o.Offset)
}

// convNumel returns the number of elements of shape.
func convNumel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// convDense reports whether strides are the row-major strides of shape
// (dimensions of extent 1 may have any stride).
func convDense(shape, strides []int) bool {
	if len(strides) != len(shape) {
		return false
	}
	want := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && strides[i] != want {
			return false
		}
		want *= shape[i]
	}
	return true
}

// convArgs are the geometry parameters shared by conv.cu's kernels, in
// their order (N, C, H, W, O, K, S, P, OH, OW, cm), after checking that
// every index of the passes fits the kernels' 32-bit arithmetic.
func convArgs(op string, s tensor.ConvShape) [11]int32 {
	oh, ow := s.OutH(), s.OutW()
	for _, n := range []int{
		s.N * s.In * s.H * s.W, s.Out * s.N * oh * ow, s.Out * s.In * s.K * s.K,
		s.N * s.H * s.W, s.N * oh * ow, s.Out * s.K * s.K,
	} {
		if n > math.MaxInt32 || n < 0 {
			must(op, fmt.Errorf("cuda: convolution %+v has a dimension of %d elements, beyond conv.cu's 32-bit indices", s, n))
		}
	}
	if s.S < 1 || s.K < 1 || s.P < 0 {
		must(op, fmt.Errorf("cuda: convolution %+v: stride and kernel must be positive, padding non-negative", s))
	}
	cm := int32(0)
	if s.ChannelMajor {
		cm = 1
	}
	return [11]int32{int32(s.N), int32(s.In), int32(s.H), int32(s.W), int32(s.Out), int32(s.K), int32(s.S), int32(s.P),
		int32(oh), int32(ow), cm}
}

// convGrid returns the launch configuration of an m x n product in
// 64 x 64 tiles, with z blocks along the third dimension.
func convGrid(op string, m, n, z int) kc.Config {
	tile := convTileOf(m)
	gy := (m + tile - 1) / tile
	if gy > 65535 {
		must(op, fmt.Errorf("cuda: %d rows exceed the %d of one conv.cu launch (grid limit)", m, 65535*tile))
	}
	return kc.Config{
		Grid:  driver.Dim3{X: max((n+tile-1)/tile, 1), Y: max(gy, 1), Z: z},
		Block: driver.Dim3{X: 256, Y: 1, Z: 1},
	}
}

// convFlag is a kernel's int flag for b.
func convFlag(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// ConvForward sets y to the convolution of x by w plus b (conv_fwd_f32,
// the bias added in the same pass). It keeps nothing: the result is nil.
func (be *Backend) ConvForward(y, x, w, b tensor.Operand, s tensor.ConvShape, al tensor.ConvAlgos, keep bool) tensor.ConvSaved {
	const op = "ConvForward"
	a := convArgs(op, s)
	oh, ow := s.OutH(), s.OutW()
	cols := s.N * oh * ow
	yp := be.convPtr(op, "y", y, s.Out*cols)
	xp := be.convPtr(op, "x", x, s.N*s.In*s.H*s.W)
	wp := be.convPtr(op, "w", w, s.Out*s.In*s.K*s.K)
	bp, hasBias := be.dummy, false
	if !tensor.IsZeroOperand(b) {
		bp, hasBias = be.convPtr(op, "b", b, s.Out), true
	}
	if s.Out == 0 || cols == 0 {
		return nil
	}
	if k, ok := be.convTCForProduct("fwd", s.Out, cols); ok {
		be.convForwardTC(op, k, yp, xp, wp, bp, hasBias, s, a)
		return nil
	}
	fwd := kc.ConvFwdF32
	if convWide(s.Out) {
		fwd = kc.ConvFwdWideF32
	}
	be.queued(op, fwd(be.g, convGrid(op, s.Out, cols, 1), yp, xp, wp, bp, convFlag(hasBias),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
	return nil
}

// ConvInputGrad sets (adds, when acc) dx to the input gradient of the
// convolution given dy (conv_dgrad_f32: each input element gathers its
// terms, so no atomics). saved is ignored.
func (be *Backend) ConvInputGrad(dx, dy, w tensor.Operand, s tensor.ConvShape, al tensor.ConvAlgos, saved tensor.ConvSaved, acc bool) {
	const op = "ConvInputGrad"
	a := convArgs(op, s)
	cols := s.N * s.H * s.W
	dxp := be.convPtr(op, "dx", dx, s.In*cols)
	dyp := be.convPtr(op, "dy", dy, s.Out*s.N*s.OutH()*s.OutW())
	wp := be.convPtr(op, "w", w, s.Out*s.In*s.K*s.K)
	if s.In == 0 || cols == 0 {
		return
	}
	if s.S > 1 && !be.checkedStrided && be.convInputGradStrided(op, dxp, dyp, wp, acc, s, a) {
		return
	}
	if k, ok := be.convTCForProduct("dgrad", s.In, cols); ok {
		be.convInputGradTC(op, k, dxp, dyp, wp, acc, s, a)
		return
	}
	dgrad := kc.ConvDgradF32
	if convWide(s.In) {
		dgrad = kc.ConvDgradWideF32
	}
	be.queued(op, dgrad(be.g, convGrid(op, s.In, cols, 1), dxp, dyp, wp, convFlag(acc),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
}

// convStridedScratch bounds the scratch product of the strided input
// gradient (convInputGradStrided), in bytes: beyond it (large images
// under a large kernel, e.g. an ImageNet stem's) the direct kernels run.
const convStridedScratch = 1 << 30

// convInputGradStrided runs the input gradient of a convolution of
// stride S > 1 as a dense product and a gather, and reports whether it
// did. The direct kernels' columns are the input positions (conv_dgrad_*:
// dx = w^T' * dycol), and at stride S only 1 in S^2 of them meets a given
// tap, so their product is mostly zeros (4x the work at stride 2).
// Instead: w^T (C*K*K x O, conv_wt_f32 with one tap); dcol = w^T * dy, C*K*K x
// N*OH*OW, as the forward pass of a 1 x 1 convolution from dy's O
// channel-major maps (conv_tc.cu's dense path in tf32 and bf16, conv.cu's
// forward kernels in fp32); then conv_col2im_taps<T>_f32 (conv_col2im_f32 beyond 4 taps a side) gathers each input
// element's taps from dcol (conv.cu). It runs where dcol fits in
// convStridedScratch. Under $DUEL_CUDA_STRIDED_GRAD=phases the phases
// run instead on the tensor cores where they can (convInputGradPhases):
// no dcol, a quarter of the direct kernels' work at stride 2, but slower
// than dcol on an H200 (StridedGradEnv).
func (be *Backend) convInputGradStrided(op string, dxp, dyp, wp driver.DevicePtr, acc bool, s tensor.ConvShape, a [11]int32) bool {
	if be.phasesStrided && be.convInputGradPhases(op, dxp, dyp, wp, acc, s, a) {
		return true
	}
	r := s.In * s.K * s.K
	oh, ow := s.OutH(), s.OutW()
	p := s.N * oh * ow
	if int64(r)*int64(p)*4 > convStridedScratch {
		return false
	}
	sc := &scratch{mem: be.mem}
	defer sc.release() // the stream orders later users of the memory after these kernels
	wT, err := sc.alloc(4 * r * s.Out)
	must(op, err)
	dcol, err := sc.alloc(4 * r * p)
	must(op, err)
	be.convWt(op, wT, wp, s.Out, r, 1)
	// The forward pass of a 1 x 1 convolution from O channels of oh x ow
	// maps (dy) to r channels (dcol), channel-major.
	g := [11]int32{a[0], int32(s.Out), int32(oh), int32(ow), int32(r), 1, 1, 0, int32(oh), int32(ow), 1}
	if k, ok := be.convTCForProduct("fwd", r, p); ok {
		be.queued(op, convTCFwd[k.name](be.g, convTCLaunch(op, k, r, p, 1), dcol, dyp, wT, be.dummy, 0,
			g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10]))
	} else {
		fwd := kc.ConvFwdF32
		if convWide(r) {
			fwd = kc.ConvFwdWideF32
		}
		be.queued(op, fwd(be.g, convGrid(op, r, p, 1), dcol, dyp, wT, be.dummy, 0,
			g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10]))
	}
	be.col2im(op, dxp, dcol, acc, s, a)
	return true
}

// convSplits returns how many chunks conv_wgrad_f32 splits a reduction of
// length p into for an output of tiles blocks on a device of sms
// multiprocessors (about two blocks a multiprocessor, chunks of at least
// 256), and the chunk length, a multiple of 16.
func convSplits(p, tiles, sms int) (splits, chunk int) {
	splits = min(max(2*sms/max(tiles, 1), 1), max(p/256, 1), 65535)
	chunk = (p + splits - 1) / splits
	chunk = (chunk + 15) / 16 * 16
	if chunk == 0 {
		return 1, 0
	}
	return (p + chunk - 1) / chunk, chunk
}

// ConvWeightGrad sets (adds, when acc) dw to the weight gradient
// (conv_wgrad_f32). Its reduction over the batch's output positions is
// split into chunks whose partial products, in a scratch buffer,
// conv_wgrad_reduce_f32 then sums in a fixed order.
func (be *Backend) ConvWeightGrad(dw, dy, x tensor.Operand, s tensor.ConvShape, al tensor.ConvAlgos, acc bool) {
	const op = "ConvWeightGrad"
	a := convArgs(op, s)
	p := s.N * s.OutH() * s.OutW()
	r := s.In * s.K * s.K
	dwp := be.convPtr(op, "dw", dw, s.Out*r)
	dyp := be.convPtr(op, "dy", dy, s.Out*p)
	xp := be.convPtr(op, "x", x, s.N*s.In*s.H*s.W)
	if s.Out == 0 || r == 0 {
		return
	}
	if k, ok := be.convTCFor("wgrad", s.Out); ok {
		be.convWeightGradTC(op, k, dwp, dyp, xp, acc, s, a)
		return
	}
	tile := convTileOf(s.Out)
	tiles := ((s.Out + tile - 1) / tile) * ((r + tile - 1) / tile)
	splits, chunk := convSplits(p, tiles, be.g.Multiprocessors())
	wgrad := kc.ConvWgradF32
	if convWide(s.Out) {
		wgrad = kc.ConvWgradWideF32
	}
	if splits <= 1 {
		be.queued(op, wgrad(be.g, convGrid(op, s.Out, r, 1), dwp, dyp, xp, convFlag(acc), int32(max(p, 0)),
			a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
		return
	}
	sc := &scratch{mem: be.mem}
	defer sc.release() // the stream orders later users of the memory after these kernels
	part, err := sc.alloc(4 * splits * s.Out * r)
	must(op, err)
	be.queued(op, wgrad(be.g, convGrid(op, s.Out, r, splits), part, dyp, xp, 0, int32(chunk),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
	n := int64(s.Out) * int64(r)
	be.queued(op, kc.ConvWgradReduceF32(be.g, be.grid(n), dwp, part, int32(splits), n, convFlag(acc)))
}

// ConvBiasGrad adds the sum of output channel c of dy into db[c]
// (conv_bias_grad_f32: one block per channel, summed in double).
func (be *Backend) ConvBiasGrad(db, dy tensor.Operand, s tensor.ConvShape) {
	const op = "ConvBiasGrad"
	convArgs(op, s)
	p := s.N * s.OutH() * s.OutW()
	dbp := be.convPtr(op, "db", db, s.Out)
	dyp := be.convPtr(op, "dy", dy, s.Out*p)
	if s.Out == 0 || p == 0 {
		return
	}
	cfg := kc.Config{
		Grid:  driver.Dim3{X: min(s.Out, be.g.Multiprocessors()*32, 65535), Y: 1, Z: 1},
		Block: driver.Dim3{X: be.block, Y: 1, Z: 1},
	}
	be.queued(op, kc.ConvBiasGradF32(be.g, cfg, dbp, dyp, int32(s.Out), int64(p)))
}
