package cuda

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.RowsBackend = (*Backend)(nil)

// rowsGeom returns the lanes of x's shape along axis: the element counts
// before (outer), along (n) and after (inner) it and their product,
// panicking on a bad axis.
func rowsGeom(op string, shape []int, axis int) (outer, n, inner, total int) {
	if axis < 0 || axis >= len(shape) {
		panic(fmt.Sprintf("cuda: Backend.%s: axis %d of shape %v", op, axis, shape))
	}
	outer, inner = 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	return outer, shape[axis], inner, outer * shape[axis] * inner
}

// lanes returns the launch configuration of rows.cu's lane kernels: one
// block per lane, grid-stride over lanes beyond about 32 blocks per
// multiprocessor.
func (be *Backend) lanes(count int) kc.Config {
	blocks := min(count, be.g.Multiprocessors()*32, 1<<20)
	return kc.Config{Grid: driver.Dim3{X: max(blocks, 1), Y: 1, Z: 1}, Block: driver.Dim3{X: be.block, Y: 1, Z: 1}}
}

// rowsLaunch validates the dense operands ops (named by names, all of
// x's total elements) and returns their addresses and the geometry, with
// ok false when there is nothing to compute.
func (be *Backend) rowsLaunch(op string, shape []int, axis int, names []string, ops ...tensor.Operand) (p []driver.DevicePtr, outer, n, inner int64, cfg kc.Config, ok bool) {
	o, nn, in, total := rowsGeom(op, shape, axis)
	p = make([]driver.DevicePtr, len(ops))
	for i, x := range ops {
		p[i] = be.dense(op, names[i], x, total)
	}
	if total == 0 {
		return p, 0, 0, 0, cfg, false
	}
	return p, int64(o), int64(nn), int64(in), be.lanes(o * in), true
}

// Softmax sets y = softmax(x) along axis (rows.cu's softmax_f32: one block
// per lane, the CPU's float32 exponentials and float64 sum).
func (be *Backend) Softmax(y, x tensor.Operand, axis int) {
	const op = "Softmax"
	p, o, n, in, cfg, ok := be.rowsLaunch(op, x.Shape, axis, []string{"y", "x"}, y, x)
	if ok {
		be.queued(op, kc.SoftmaxF32(be.g, cfg, p[0], p[1], o, n, in))
	}
}

// SoftmaxBack sets dx = y·(g - Σ g·y) along axis (softmax_back_f32).
func (be *Backend) SoftmaxBack(dx, g, y tensor.Operand, axis int) {
	const op = "SoftmaxBack"
	p, o, n, in, cfg, ok := be.rowsLaunch(op, g.Shape, axis, []string{"dx", "g", "y"}, dx, g, y)
	if ok {
		be.queued(op, kc.SoftmaxBackF32(be.g, cfg, p[0], p[1], p[2], o, n, in))
	}
}

// LogSoftmax sets y = log softmax(x) along axis and, unless p is the zero
// Operand, p = softmax(x) (log_softmax_f32).
func (be *Backend) LogSoftmax(y, p, x tensor.Operand, axis int) {
	const op = "LogSoftmax"
	ptr, o, n, in, cfg, ok := be.rowsLaunch(op, x.Shape, axis, []string{"y", "x"}, y, x)
	pp, hasP := be.denseOpt(op, "p", p, elems(x))
	if ok {
		be.queued(op, kc.LogSoftmaxF32(be.g, cfg, ptr[0], pp, ptr[1], o, n, in, b2i(hasP)))
	}
}

// LogSoftmaxBack sets dx = g - p·Σg along axis (log_softmax_back_f32).
func (be *Backend) LogSoftmaxBack(dx, g, p tensor.Operand, axis int) {
	const op = "LogSoftmaxBack"
	ptr, o, n, in, cfg, ok := be.rowsLaunch(op, g.Shape, axis, []string{"dx", "g", "p"}, dx, g, p)
	if ok {
		be.queued(op, kc.LogSoftmaxBackF32(be.g, cfg, ptr[0], ptr[1], ptr[2], o, n, in))
	}
}

// L2Normalize sets y = x / max(‖x‖₂, eps) along axis (l2norm_f32: the
// norm in double, each quotient in double rounded once).
func (be *Backend) L2Normalize(y, x tensor.Operand, axis int, eps float64) {
	const op = "L2Normalize"
	p, o, n, in, cfg, ok := be.rowsLaunch(op, x.Shape, axis, []string{"y", "x"}, y, x)
	if ok {
		be.queued(op, kc.L2normF32(be.g, cfg, p[0], p[1], o, n, in, eps))
	}
}

// L2NormalizeBack sets dx = (g - y·Σ g·y) / max(‖x‖₂, eps) along axis, or
// g / eps where ‖x‖₂ <= eps (l2norm_back_f32).
func (be *Backend) L2NormalizeBack(dx, g, x, y tensor.Operand, axis int, eps float64) {
	const op = "L2NormalizeBack"
	p, o, n, in, cfg, ok := be.rowsLaunch(op, x.Shape, axis, []string{"dx", "g", "x", "y"}, dx, g, x, y)
	if ok {
		be.queued(op, kc.L2normBackF32(be.g, cfg, p[0], p[1], p[2], p[3], o, n, in, eps))
	}
}

// ceGeom validates the n×c logits' shape and the targets, returning n and
// c.
func ceGeom(op string, shape []int, targets []int) (n, c int) {
	if len(shape) != 2 || len(targets) != shape[0] || shape[0] > math.MaxInt32 || shape[1] > math.MaxInt32 || shape[0]*shape[1] > math.MaxInt32 {
		panic(fmt.Sprintf("cuda: Backend.%s: logits of shape %v with %d targets (want n×c, n targets, n·c < 2^31)", op, shape, len(targets)))
	}
	n, c = shape[0], shape[1]
	for i, t := range targets {
		if t < 0 || t >= c {
			panic(fmt.Sprintf("cuda: Backend.%s: target %d of row %d outside [0, %d)", op, t, i, c))
		}
	}
	return n, c
}

// deviceTargets copies the targets to scratch memory of s as int32.
func (be *Backend) deviceTargets(op string, s *scratch, targets []int) driver.DevicePtr {
	t32 := make([]int32, len(targets))
	for i, t := range targets {
		t32[i] = int32(t)
	}
	p, err := s.alloc(4 * len(t32))
	must(op, err)
	if len(t32) > 0 {
		must(op, be.g.CopyToDevice(p, Bytes(t32)))
	}
	return p
}

// CrossEntropy sets the one element of loss to the mean over the rows of
// the n×c logits x of ln Σⱼ exp(xᵢⱼ) - xᵢ,ₜᵢ (NaN for n = 0) and, unless p
// is the zero Operand, p to the rows' softmax (cross_entropy_f32: one
// block per row, each row's term in double; rows_mean_f64 sums them in
// double).
func (be *Backend) CrossEntropy(loss, p, x tensor.Operand, targets []int) {
	const op = "CrossEntropy"
	n, c := ceGeom(op, x.Shape, targets)
	xp := be.dense(op, "x", x, n*c)
	pp, hasP := be.denseOpt(op, "p", p, n*c)
	lp := be.dense(op, "loss", loss, 1)
	s := &scratch{mem: be.mem}
	defer s.release()
	nll, err := s.alloc(8 * n)
	must(op, err)
	if n > 0 {
		t := be.deviceTargets(op, s, targets)
		be.queued(op, kc.CrossEntropyF32(be.g, be.lanes(n), nll, pp, xp, t, int32(n), int32(c), b2i(hasP)))
	}
	be.queued(op, kc.RowsMeanF64(be.g, be.oneBlock(), lp, nll, int32(n)))
}

// oneBlock returns the configuration of a one-block reduction.
func (be *Backend) oneBlock() kc.Config {
	return kc.Config{Grid: driver.Dim3{X: 1, Y: 1, Z: 1}, Block: driver.Dim3{X: be.block, Y: 1, Z: 1}}
}

// CrossEntropyBack turns the n×c probabilities p into the loss's gradient
// in place: pᵢⱼ = (pᵢⱼ - [j = tᵢ])·scale (cross_entropy_back_f32).
func (be *Backend) CrossEntropyBack(p tensor.Operand, targets []int, scale float32) {
	const op = "CrossEntropyBack"
	n, c := ceGeom(op, p.Shape, targets)
	pp := be.dense(op, "p", p, n*c)
	if n*c == 0 {
		return
	}
	s := &scratch{mem: be.mem}
	defer s.release()
	t := be.deviceTargets(op, s, targets)
	be.queued(op, kc.CrossEntropyBackF32(be.g, be.grid(int64(n*c)), pp, t, int32(n), int32(c), scale))
}
