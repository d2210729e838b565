package cuda

import (
	"math"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.OptimizerBackend = (*Backend)(nil)

// optimOperands returns the device addresses of a step's parameter and
// gradient and its number of elements, checking that both are dense.
func (be *Backend) optimOperands(op string, param, grad tensor.Operand) (w, g driver.DevicePtr, n int) {
	n = elems(param)
	return be.dense(op, "param", param, n), be.dense(op, "grad", grad, n), n
}

// momentumPtr returns the device address of the momentum buffer, or the
// dummy address when the step has no momentum (buf is then ignored).
func (be *Backend) momentumPtr(op string, buf tensor.Operand, momentum float64, n int) driver.DevicePtr {
	if momentum == 0 {
		return be.dummy
	}
	return be.dense(op, "buf", buf, n)
}

// SGDStep applies one SGD step in one launch (optim.cu's sgd_step_f32:
// kernels/optim.SGDStep's float64 arithmetic, operation for operation).
func (be *Backend) SGDStep(param, grad, buf tensor.Operand, a tensor.SGDArgs) {
	const op = "SGDStep"
	w, g, n := be.optimOperands(op, param, grad)
	b := be.momentumPtr(op, buf, a.Momentum, n)
	if n == 0 {
		return
	}
	be.queued(op, kc.SgdStepF32(be.g, be.grid(int64(n)), w, g, b, int64(n), a.LR, a.WeightDecay, a.Momentum,
		1-a.Dampening, b2i(a.Nesterov), b2i(a.First)))
}

// larsParts returns the number of parts the norms of n elements are
// reduced in: about two blocks per multiprocessor, no more than there are
// blocks of elements.
func (be *Backend) larsParts(n int) int {
	return max(1, min(2*be.g.Multiprocessors(), (n+be.block-1)/be.block))
}

// LARSStep applies one LARS step in two launches: optim.cu's
// lars_norms_f32 sums the squares of param and grad in float64 over parts
// (fixed order: deterministic), lars_step_f32 sums the parts in order,
// computes the trust ratio and applies the update (kernels/optim.LARSStep's
// arithmetic; its norms are sequential sums, so the ratio can differ from
// the CPU's in the last bits of a double). Excluded parameters skip the
// norms.
func (be *Backend) LARSStep(param, grad, buf tensor.Operand, a tensor.LARSArgs) {
	const op = "LARSStep"
	w, g, n := be.optimOperands(op, param, grad)
	b := be.momentumPtr(op, buf, a.Momentum, n)
	if n == 0 {
		return
	}
	part, parts := be.dummy, 0
	s := &scratch{mem: be.mem}
	defer s.release() // after the launches: the cache reuses it later in the stream's order
	if !a.Excluded {
		parts = be.larsParts(n)
		var err error
		part, err = s.alloc(16 * parts)
		must(op, err)
		cfg := kc.Config{Grid: driver.Dim3{X: parts, Y: 1, Z: 1}, Block: driver.Dim3{X: be.block, Y: 1, Z: 1}}
		be.queued(op, kc.LarsNormsF32(be.g, cfg, part, w, g, int64(n)))
	}
	be.queued(op, kc.LarsStepF32(be.g, be.grid(int64(n)), w, g, b, part, int32(parts), int64(n), a.LR, a.WeightDecay,
		a.Momentum, 1-a.Dampening, a.Eta, a.Eps, b2i(a.Nesterov), b2i(a.First), b2i(a.ClipLR), b2i(a.Excluded)))
}

// AdamStep applies one Adam or AdamW step in one launch (optim.cu's
// adam_step_f32; the bias corrections are computed here as
// kernels/optim.AdamStep computes them, the rest is its float64 arithmetic,
// operation for operation).
func (be *Backend) AdamStep(param, grad, m, v tensor.Operand, a tensor.AdamArgs) {
	const op = "AdamStep"
	w, g, n := be.optimOperands(op, param, grad)
	mp, vp := be.dense(op, "m", m, n), be.dense(op, "v", v, n)
	if n == 0 {
		return
	}
	stepSize, inv, decay, l2 := adamScalars(a)
	be.queued(op, kc.AdamStepF32(be.g, be.grid(int64(n)), w, g, mp, vp, int64(n), a.Beta1, a.Beta2, a.Eps,
		stepSize, inv, decay, l2))
}

// adamScalars returns the scalars of adam_step_f32 and adam_multi_f32
// (kernels/optim.AdamStep's): the step size with the first moment's bias
// correction, the inverse square root of the second's, the weight's decay
// factor (AdamW) and the gradient's L2 coefficient (Adam).
func adamScalars(a tensor.AdamArgs) (stepSize, invSqrtBC2, decay, l2 float64) {
	lr, wd, t := a.LR, a.WeightDecay, float64(a.Step)
	stepSize = lr / (1 - math.Pow(a.Beta1, t))
	invSqrtBC2 = 1 / math.Sqrt(1-math.Pow(a.Beta2, t))
	decay, l2 = 1.0, wd
	if a.Decoupled {
		decay, l2 = 1-lr*wd, 0
	}
	return stepSize, invSqrtBC2, decay, l2
}

// EMA computes target = m*target + (1-m)*online in float32 with m and 1-m
// rounded to float32 (optim.cu's ema_f32: kernels/optim.EMA's bits).
func (be *Backend) EMA(target, online tensor.Operand, m float64) {
	const op = "EMA"
	n := elems(target)
	tp, op2 := be.dense(op, "target", target, n), be.dense(op, "online", online, n)
	if n == 0 {
		return
	}
	be.queued(op, kc.EmaF32(be.g, be.grid(int64(n)), tp, op2, int64(n), float32(m), float32(1-m)))
}
