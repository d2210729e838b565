package cuda

import (
	"fmt"

	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.LinearBackend = (*Backend)(nil)

// linearDims returns the rows×cols of the matrix operand o.
func linearDims(op, name string, o tensor.Operand) (rows, cols int) {
	if len(o.Shape) != 2 {
		panic(fmt.Sprintf("cuda: Backend.%s: %s has shape %v, want a matrix", op, name, o.Shape))
	}
	return o.Shape[0], o.Shape[1]
}

// LinearForward sets y = x Wᵀ with the backend's Gemm, then adds b to
// every row unless b is the zero Operand (linear.cu's linear_bias_f32: one
// float32 add per element, the CPU's order).
func (be *Backend) LinearForward(y, x, w, b tensor.Operand) {
	const op = "LinearForward"
	rows, in := linearDims(op, "x", x)
	out, _ := linearDims(op, "w", w)
	xm, wm := be.denseMatrix(op, "x", x, rows, in, false), be.denseMatrix(op, "w", w, out, in, false)
	ym := be.denseMatrix(op, "y", y, rows, out, false)
	be.gemmRows(false, true, 1, xm, wm, false, ym, in)
	if tensor.IsZeroOperand(b) {
		return
	}
	bp := be.dense(op, "b", b, out)
	if rows*out > 0 {
		be.queued(op, kc.LinearBiasF32(be.g, be.grid(int64(rows*out)), be.matPtr(op, ym), bp, int64(rows), int32(out)))
	}
}

// LinearInputGrad sets (adds, when acc) dx = dy W with the backend's Gemm.
func (be *Backend) LinearInputGrad(dx, dy, w tensor.Operand, acc bool) {
	const op = "LinearInputGrad"
	rows, in := linearDims(op, "dx", dx)
	out, _ := linearDims(op, "w", w)
	dym, wm := be.denseMatrix(op, "dy", dy, rows, out, false), be.denseMatrix(op, "w", w, out, in, false)
	dxm := be.denseMatrix(op, "dx", dx, rows, in, false)
	be.gemmRows(false, false, 1, dym, wm, acc, dxm, out)
}

// LinearWeightGrad sets (adds, when acc) dW = dyᵀ x with the backend's
// Gemm.
func (be *Backend) LinearWeightGrad(dw, dy, x tensor.Operand, acc bool) {
	const op = "LinearWeightGrad"
	rows, in := linearDims(op, "x", x)
	out, _ := linearDims(op, "dw", dw)
	dym, xm := be.denseMatrix(op, "dy", dy, rows, out, false), be.denseMatrix(op, "x", x, rows, in, false)
	dwm := be.denseMatrix(op, "dw", dw, out, in, false)
	be.gemmRows(true, false, 1, dym, xm, acc, dwm, rows)
}

// LinearBiasGrad adds the sum of the rows of dy into db
// (linear_bias_grad_f32: one thread per column, float32 in row order, the
// CPU's bits).
func (be *Backend) LinearBiasGrad(db, dy tensor.Operand) {
	const op = "LinearBiasGrad"
	rows, out := linearDims(op, "dy", dy)
	dyp := be.dense(op, "dy", dy, rows*out)
	dbp := be.dense(op, "db", db, out)
	if rows*out == 0 {
		return
	}
	be.queued(op, kc.LinearBiasGradF32(be.g, be.grid(int64(out)), dbp, dyp, int64(rows), int32(out)))
}
