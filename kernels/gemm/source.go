package gemm

import "runtime"

// PanelSource is a B operand that Sgemm never sees as a matrix: it writes
// B's micro-panels itself, as Sgemm's packing would have written them from
// a stored B. A convolution uses one to gather its patch matrix straight
// into the panels (an implicit im2col) instead of writing the matrix and
// then copying it into panels.
type PanelSource interface {
	// PackPanels writes the micro-panels q0 <= q < q1 of
	// B[p0:p0+kc, j0:j0+nc] into dst: panel q holds, for each p < kc, the
	// nr values B[p0+p, j0+q*nr+j] at dst[q*nr*kc+p*nr+j], zero for the
	// columns past nc. Threads of one Sgemm call it at the same time for
	// different panels.
	PackPanels(dst []float32, p0, kc, j0, nc, nr, q0, q1 int)
}

// SgemmSource computes C = A*B + beta*C like Sgemm with alpha 1 and
// neither operand transposed, B (k x n) given by the micro-panels src
// writes. The result is bit-identical to Sgemm's on the stored B whose
// panels src writes.
func SgemmSource(m, n, k int, a []float32, lda int, src PanelSource, beta float32, c []float32, ldc int) {
	sgemm(active, sourceProblem(m, n, k, a, lda, src, beta, c, ldc), runtime.GOMAXPROCS(0))
}

// SgemmSerialSource is SgemmSource on the caller's goroutine only (see
// SgemmSerial).
func SgemmSerialSource(m, n, k int, a []float32, lda int, src PanelSource, beta float32, c []float32, ldc int) {
	sgemm(active, sourceProblem(m, n, k, a, lda, src, beta, c, ldc), 1)
}

// sourceProblem returns the problem of SgemmSource's arguments.
func sourceProblem(m, n, k int, a []float32, lda int, src PanelSource, beta float32, c []float32, ldc int) problem {
	if src == nil {
		panic("gemm: nil PanelSource")
	}
	return problem{m: m, n: n, k: k, alpha: 1, a: a, lda: lda, beta: beta, c: c, ldc: ldc, src: src}
}

// PackedPanelWidth returns the width nr of the micro-panels of B in a
// product whose C has m rows, and whether Sgemm packs a non-transposed B
// into them (false: it reads B's rows in place, and a PanelSource would
// add a copy that a stored B does not need).
func PackedPanelWidth(m int) (nr int, packs bool) {
	kn := active.forRows(m)
	return kn.nr, !kn.bInPlace
}

// packB writes the micro-panels q0 <= q < q1 of op(B)[p0:p0+kc, j0:j0+nc]
// into dst, from p.src or from the stored B.
func (p *problem) packB(dst []float32, p0, kc, j0, nc, nr, q0, q1 int) {
	if p.src != nil {
		p.src.PackPanels(dst, p0, kc, j0, nc, nr, q0, q1)
		return
	}
	packB(dst, p.b, p.ldb, p.transB, p0, kc, j0, nc, nr, q0, q1)
}
