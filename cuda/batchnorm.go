package cuda

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.BatchNormBackend = (*Backend)(nil)

// denseOpt is dense for an optional operand: the dummy address and false
// for the zero Operand.
func (be *Backend) denseOpt(op, name string, o tensor.Operand, n int) (driver.DevicePtr, bool) {
	if tensor.IsZeroOperand(o) {
		return be.dummy, false
	}
	return be.dense(op, name, o, n), true
}

// bnSize returns the elements N·C·S of g's activation, panicking when
// batchnorm.cu's 32-bit indices cannot address them or g is malformed.
func bnSize(op string, g tensor.BatchNormGeom) int {
	n := g.N * g.C * g.S
	if g.N < 0 || g.C < 0 || g.S < 0 || g.Splits <= 0 || g.N%g.Splits != 0 || g.Splits > 65535 || n > math.MaxInt32 {
		panic(fmt.Sprintf("cuda: Backend.%s: geometry %+v beyond batchnorm.cu's (N a multiple of Splits <= 65535, N·C·S < 2^31)", op, g))
	}
	return n
}

// reduction returns the launch configuration of batchnorm.cu's partial
// reductions, one block per (channel, group, part), and the number of
// parts P: enough blocks for about four per multiprocessor, each part at
// least four elements per thread.
func (be *Backend) reduction(g tensor.BatchNormGeom) (kc.Config, int) {
	groups := g.C * g.Splits
	cnt := g.N / g.Splits * g.S
	p := (4*be.g.Multiprocessors() + groups - 1) / groups
	p = max(1, min(p, cnt/(4*be.block), 65535))
	return kc.Config{Grid: driver.Dim3{X: g.C, Y: g.Splits, Z: p}, Block: driver.Dim3{X: be.block, Y: 1, Z: 1}}, p
}

// BatchNormTrain normalises a.X with the statistics of each group and
// channel (batchnorm.cu: bn_stats_f32, blocks per (channel, group, part)
// accumulating in double, and bn_stats_finish_f32 summing the parts,
// moving the running statistics in double and counting the batch; then bn_normalize_f32 in
// float32, fused residual and ReLU). The results agree with
// the CPU backend's to float32 rounding, not bit for bit.
func (be *Backend) BatchNormTrain(g tensor.BatchNormGeom, a tensor.BatchNormArgs) {
	const op = "BatchNormTrain"
	n, c, k := bnSize(op, g), g.C, g.Splits*g.C
	x, y := be.dense(op, "X", a.X, n), be.dense(op, "Y", a.Y, n)
	res, hasRes := be.denseOpt(op, "Res", a.Res, n)
	gamma, beta := be.dense(op, "Gamma", a.Gamma, c), be.dense(op, "Beta", a.Beta, c)
	rm, rv := be.dense(op, "RunningMean", a.RunningMean, c), be.dense(op, "RunningVar", a.RunningVar, c)
	mean, invstd := be.dense(op, "Mean", a.Mean, k), be.dense(op, "InvStd", a.InvStd, k)
	batches, count := be.denseOpt(op, "NumBatches", a.NumBatches, 1)
	if c == 0 {
		if count {
			be.Unary(tensor.OpAddScalar, a.NumBatches, a.NumBatches, 1)
		}
		return
	}
	s := &scratch{mem: be.mem}
	defer s.release() // after the launches: the cache reuses it later in the stream's order
	cfg, parts := be.reduction(g)
	part, err := s.alloc(16 * k * parts)
	must(op, err)
	cm := b2i(g.ChannelMajor)
	be.queued(op, kc.BnStatsF32(be.g, cfg, part, x, int32(g.N), int32(c), int32(g.S), int32(g.Splits), cm))
	be.queued(op, kc.BnStatsFinishF32(be.g, be.grid(int64(c)), mean, invstd, rm, rv, part, x,
		int32(g.N), int32(c), int32(g.S), int32(g.Splits), cm, int32(parts), a.Eps, a.Momentum, batches, b2i(count)))
	if n == 0 {
		return
	}
	be.queued(op, kc.BnNormalizeF32(be.g, be.grid(int64(n)), y, x, res, mean, invstd, gamma, beta,
		int32(g.N), int32(c), int32(g.S), int32(g.Splits), cm, b2i(hasRes), b2i(a.ReLU)))
}

// BatchNormEval normalises a.X with the running statistics
// (bn_eval_stats_f32, then bn_normalize_f32).
func (be *Backend) BatchNormEval(g tensor.BatchNormGeom, a tensor.BatchNormArgs) {
	const op = "BatchNormEval"
	n, c := bnSize(op, g), g.C
	x, y := be.dense(op, "X", a.X, n), be.dense(op, "Y", a.Y, n)
	res, hasRes := be.denseOpt(op, "Res", a.Res, n)
	gamma, beta := be.dense(op, "Gamma", a.Gamma, c), be.dense(op, "Beta", a.Beta, c)
	rm, rv := be.dense(op, "RunningMean", a.RunningMean, c), be.dense(op, "RunningVar", a.RunningVar, c)
	mean, invstd := be.dense(op, "Mean", a.Mean, c), be.dense(op, "InvStd", a.InvStd, c)
	if c == 0 {
		return
	}
	be.queued(op, kc.BnEvalStatsF32(be.g, be.grid(int64(c)), mean, invstd, rm, rv, int32(c), a.Eps))
	if n == 0 {
		return
	}
	be.queued(op, kc.BnNormalizeF32(be.g, be.grid(int64(n)), y, x, res, mean, invstd, gamma, beta,
		int32(g.N), int32(c), int32(g.S), int32(g.Splits), b2i(g.ChannelMajor), b2i(hasRes), b2i(a.ReLU)))
}

// BatchNormBackward computes the gradients of a: the sums of dy and of
// dy·xhat per (group, channel) in double (bn_back_sums_f32 over parts,
// bn_back_sums_finish_f32, which also forms the weight and bias gradients
// from them), and the input and residual gradients elementwise
// in float32 (bn_back_dx_f32), all through the fused ReLU's mask (dy
// counts where a.Y > 0).
func (be *Backend) BatchNormBackward(g tensor.BatchNormGeom, a tensor.BatchNormGrad) {
	const op = "BatchNormBackward"
	n, c, k := bnSize(op, g), g.C, g.Splits*g.C
	x, dy := be.dense(op, "X", a.X, n), be.dense(op, "DY", a.DY, n)
	mask, hasMask := be.denseOpt(op, "Y", a.Y, n)
	mean, invstd := be.dense(op, "Mean", a.Mean, k), be.dense(op, "InvStd", a.InvStd, k)
	gamma := be.dense(op, "Gamma", a.Gamma, c)
	dx, doDX := be.denseOpt(op, "DX", a.DX, n)
	dres, doDRes := be.denseOpt(op, "DRes", a.DRes, n)
	dgamma, doDGamma := be.denseOpt(op, "DGamma", a.DGamma, c)
	dbeta, doDBeta := be.denseOpt(op, "DBeta", a.DBeta, c)
	if c == 0 {
		return
	}
	s := &scratch{mem: be.mem}
	defer s.release()
	cfg, parts := be.reduction(g)
	sums, err := s.alloc(16 * k)
	must(op, err)
	part, err := s.alloc(16 * k * parts)
	must(op, err)
	cm := b2i(g.ChannelMajor)
	be.queued(op, kc.BnBackSumsF32(be.g, cfg, part, x, dy, mask, mean,
		int32(g.N), int32(c), int32(g.S), int32(g.Splits), cm, b2i(hasMask)))
	be.queued(op, kc.BnBackSumsFinishF32(be.g, be.grid(int64(c)), sums, dgamma, dbeta, part, invstd, int32(c), int32(g.Splits),
		int32(parts), b2i(doDGamma), b2i(a.AccDGamma), b2i(doDBeta), b2i(a.AccDBeta)))
	if (doDX || doDRes) && n > 0 {
		be.queued(op, kc.BnBackDxF32(be.g, be.grid(int64(n)), dx, dres, x, dy, mask, mean, invstd, gamma, sums,
			int32(g.N), int32(c), int32(g.S), int32(g.Splits), cm, b2i(hasMask), b2i(a.Training),
			b2i(doDX), b2i(a.AccDX), b2i(doDRes), b2i(a.AccDRes)))
	}
}
