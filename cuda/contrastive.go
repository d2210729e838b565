package cuda

import (
	"fmt"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.ContrastiveBackend = (*Backend)(nil)

// matrix is a dense row-major matrix operand of a fused loss: its buffer,
// offset and shape.
type matrix struct {
	buf        tensor.Buffer
	off        int
	rows, cols int
}

// denseMatrix validates that o is a dense rows×cols matrix (rows < 0: any
// number of rows) and returns it; the zero Operand gives a 0×cols matrix
// when optional.
func (be *Backend) denseMatrix(op, name string, o tensor.Operand, rows, cols int, optional bool) matrix {
	if optional && tensor.IsZeroOperand(o) {
		return matrix{cols: cols}
	}
	if len(o.Shape) != 2 || (rows >= 0 && o.Shape[0] != rows) || o.Shape[1] != cols {
		panic(fmt.Sprintf("cuda: Backend.%s: %s has shape %v, want %d×%d", op, name, o.Shape, rows, cols))
	}
	be.dense(op, name, o, o.Shape[0]*cols)
	return matrix{o.Buf, o.Offset, o.Shape[0], cols}
}

// scalar validates the one-element operand o (of any shape) and returns it
// as a 1×1 matrix.
func (be *Backend) scalar(op, name string, o tensor.Operand) matrix {
	be.dense(op, name, o, 1)
	return matrix{o.Buf, o.Offset, 1, 1}
}

// matPtr returns the matrix's device address (the dummy one when empty).
func (be *Backend) matPtr(op string, m matrix) driver.DevicePtr {
	if m.rows*m.cols == 0 {
		return be.dummy
	}
	return be.ptr(op, m.buf, m.off)
}

// gemmRows sets (adds, when acc) c = alpha·op(a)·op(b) for dense row-major
// matrices with the backend's Gemm: c is m×n, op(a) m×k, op(b) k×n.
func (be *Backend) gemmRows(transA, transB bool, alpha float32, a, b matrix, acc bool, c matrix, k int) {
	if c.rows == 0 || c.cols == 0 {
		return
	}
	if k == 0 { // no terms: the product is zero
		if !acc {
			must("Gemm", be.g.Zero(be.ptr("Gemm", c.buf, c.off), 4*c.rows*c.cols))
		}
		return
	}
	beta := float32(0)
	if acc {
		beta = 1
	}
	be.Gemm(tensor.GemmArgs{TransA: transA, TransB: transB, M: c.rows, N: c.cols, K: k, Alpha: alpha, Beta: beta,
		A: a.buf, B: b.buf, C: c.buf, OffA: a.off, OffB: b.off, OffC: c.off,
		LDA: a.cols, LDB: b.cols, LDC: c.cols, Batch: 1})
}

// contrast runs contrast_rows_f32 on the logits s (rows×cands) and e
// (rows×n, maybe empty) and averages the rows' terms into loss
// (rows_mean_f64).
func (be *Backend) contrast(op string, loss, s, e matrix, half int, a tensor.ContrastArgs) {
	sc := &scratch{mem: be.mem}
	defer sc.release()
	rows := s.rows
	term, err := sc.alloc(8 * rows)
	must(op, err)
	if rows > 0 {
		be.queued(op, kc.ContrastRowsF32(be.g, be.lanes(rows), term, be.matPtr(op, s), be.matPtr(op, e),
			int32(rows), int32(s.cols), int32(e.cols), int32(half), a.Eps, b2i(a.BatchNegatives)))
	}
	be.queued(op, kc.RowsMeanF64(be.g, be.oneBlock(), be.matPtr(op, loss), term, int32(rows)))
}

// scaleBySeed multiplies the dense matrix m by seed/τ in float32
// (contrast_scale_f32, reading the one-element seed on the device).
func (be *Backend) scaleBySeed(op string, m matrix, seed tensor.Operand, tau float64) {
	n := m.rows * m.cols
	if n == 0 {
		return
	}
	sp := be.dense(op, "seed", seed, 1)
	be.queued(op, kc.ContrastScaleF32(be.g, be.grid(int64(n)), be.matPtr(op, m), sp, int64(n), tau))
}

// infoNCEMatrices checks and resolves InfoNCE's operands: q and k (b×d),
// the optional negatives (n×d) and the logits' derivatives gs (b×b) and ge
// (b×n).
func (be *Backend) infoNCEMatrices(op string, gs, ge, q, k, neg tensor.Operand) (qm, km, nm, sm, em matrix) {
	if len(q.Shape) != 2 {
		panic(fmt.Sprintf("cuda: Backend.%s: q has shape %v, want b×d", op, q.Shape))
	}
	b, d := q.Shape[0], q.Shape[1]
	qm, km = be.denseMatrix(op, "q", q, b, d, false), be.denseMatrix(op, "k", k, b, d, false)
	nm = be.denseMatrix(op, "neg", neg, -1, d, true)
	sm, em = be.denseMatrix(op, "gs", gs, b, b, false), be.denseMatrix(op, "ge", ge, b, nm.rows, nm.rows == 0)
	return qm, km, nm, sm, em
}

// ntXentMatrices checks and resolves NT-Xent's operands: z (2b×d), the
// optional negatives (n×d) and the logits' derivatives gs (2b×2b) and ge
// (2b×n).
func (be *Backend) ntXentMatrices(op string, gs, ge, z, neg tensor.Operand) (zm, nm, sm, em matrix) {
	if len(z.Shape) != 2 || z.Shape[0]%2 != 0 {
		panic(fmt.Sprintf("cuda: Backend.%s: z has shape %v, want 2b×d", op, z.Shape))
	}
	m, d := z.Shape[0], z.Shape[1]
	zm = be.denseMatrix(op, "z", z, m, d, false)
	nm = be.denseMatrix(op, "neg", neg, -1, d, true)
	sm, em = be.denseMatrix(op, "gs", gs, m, m, false), be.denseMatrix(op, "ge", ge, m, nm.rows, nm.rows == 0)
	return zm, nm, sm, em
}

// InfoNCE computes the logits q·kᵀ/τ and q·negᵀ/τ with the backend's Gemm
// and the rows' log-sum-exps, the loss and the kept derivatives with
// contrast_rows_f32 (kernels/loss's arithmetic: float64 per row).
func (be *Backend) InfoNCE(loss, gs, ge, q, k, neg tensor.Operand, a tensor.ContrastArgs) {
	const op = "InfoNCE"
	qm, km, nm, sm, em := be.infoNCEMatrices(op, gs, ge, q, k, neg)
	d := qm.cols
	lm := be.scalar(op, "loss", loss)
	invTau := float32(1 / a.Tau)
	be.gemmRows(false, true, invTau, qm, km, false, sm, d)
	be.gemmRows(false, true, invTau, qm, nm, false, em, d)
	be.contrast(op, lm, sm, em, 0, a)
}

// InfoNCEBack sets dq = (gs·k + ge·neg)·seed/τ and dk = gsᵀ·q·seed/τ, each
// unless it is the zero Operand (Gemm products, then contrast_scale_f32).
func (be *Backend) InfoNCEBack(dq, dk, gs, ge, q, k, neg, seed tensor.Operand, tau float64) {
	const op = "InfoNCEBack"
	qm, km, nm, sm, em := be.infoNCEMatrices(op, gs, ge, q, k, neg)
	b, d, n := qm.rows, qm.cols, nm.rows
	if !tensor.IsZeroOperand(dq) {
		dqm := be.denseMatrix(op, "dq", dq, b, d, false)
		be.gemmRows(false, false, 1, sm, km, false, dqm, b)
		be.gemmRows(false, false, 1, em, nm, true, dqm, n)
		be.scaleBySeed(op, dqm, seed, tau)
	}
	if !tensor.IsZeroOperand(dk) {
		dkm := be.denseMatrix(op, "dk", dk, b, d, false)
		be.gemmRows(true, false, 1, sm, qm, false, dkm, b)
		be.scaleBySeed(op, dkm, seed, tau)
	}
}

// NTXent computes the logits z·zᵀ/τ and z·negᵀ/τ with the backend's Gemm
// and the rows with contrast_rows_f32 (anchor r's positive r ± b, itself
// excluded).
func (be *Backend) NTXent(loss, gs, ge, z, neg tensor.Operand, a tensor.ContrastArgs) {
	const op = "NTXent"
	zm, nm, sm, em := be.ntXentMatrices(op, gs, ge, z, neg)
	m, d := zm.rows, zm.cols
	lm := be.scalar(op, "loss", loss)
	invTau := float32(1 / a.Tau)
	be.gemmRows(false, true, invTau, zm, zm, false, sm, d)
	be.gemmRows(false, true, invTau, zm, nm, false, em, d)
	be.contrast(op, lm, sm, em, m/2, a)
}

// NTXentBack sets dz = (gs·z + gsᵀ·z + ge·neg)·seed/τ (Gemm products, then
// contrast_scale_f32).
func (be *Backend) NTXentBack(dz, gs, ge, z, neg, seed tensor.Operand, tau float64) {
	const op = "NTXentBack"
	zm, nm, sm, em := be.ntXentMatrices(op, gs, ge, z, neg)
	m, d, n := zm.rows, zm.cols, nm.rows
	dzm := be.denseMatrix(op, "dz", dz, m, d, false)
	be.gemmRows(false, false, 1, sm, zm, false, dzm, m)
	be.gemmRows(true, false, 1, sm, zm, true, dzm, m)
	be.gemmRows(false, false, 1, em, nm, true, dzm, n)
	be.scaleBySeed(op, dzm, seed, tau)
}
