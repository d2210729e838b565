package tensor

import "fmt"

// matLayout describes how a 2-d view (rows, cols, strides rs and cs) maps
// onto a row-major GEMM operand: trans reports that the stored matrix is the
// transpose of the view and ld is the stored row stride. ok is false when
// the view is not a strided matrix a GEMM can read (it must be copied).
func matLayout(rows, cols, rs, cs int) (trans bool, ld int, ok bool) {
	switch {
	case cs == 1 || cols == 1:
		// Row-major: row i starts at i*rs.
		ld = rs
		if rows <= 1 {
			ld = max(cols, 1)
		}
		if ld >= max(cols, 1) {
			return false, ld, true
		}
	}
	if rs == 1 || rows == 1 {
		// Column-major: the stored matrix is cols x rows with row stride cs.
		ld = cs
		if cols <= 1 {
			ld = max(rows, 1)
		}
		if ld >= max(rows, 1) {
			return true, ld, true
		}
	}
	return false, 0, false
}

// MatMul returns the product of the 2-d tensors a (m x k) and b (k x n).
// Transposed views are passed to the GEMM as transpose flags, not copied.
func MatMul(a, b *Tensor) *Tensor {
	if a.NDim() != 2 || b.NDim() != 2 || a.shape[1] != b.shape[0] {
		panic(fmt.Sprintf("tensor.MatMul: shapes %v and %v, want (m,k) and (k,n)", a.shape, b.shape))
	}
	be := sameBackend("MatMul", a, b)
	out := empty(be, a.device, []int{a.shape[0], b.shape[1]})
	matmulInto("MatMul", be, out, a, b, 0)
	return out
}

// MatMulInto computes dst = a@b + beta*dst for 2-d a (m x k), b (k x n)
// and dst (m x n). dst may be a row-major or transposed view; it must not
// overlap a or b. With beta == 0 dst is not read.
func MatMulInto(dst, a, b *Tensor, beta float32) {
	if a.NDim() != 2 || b.NDim() != 2 || dst.NDim() != 2 || a.shape[1] != b.shape[0] ||
		dst.shape[0] != a.shape[0] || dst.shape[1] != b.shape[1] {
		panic(fmt.Sprintf("tensor.MatMulInto: shapes %v = %v @ %v, want (m,n) = (m,k) @ (k,n)", dst.shape, a.shape, b.shape))
	}
	matmulInto("MatMulInto", sameBackend("MatMulInto", dst, a, b), dst, a, b, beta)
}

// BatchMatMul returns the batched product of a (batch,m,k) and b
// (batch,k,n): one (m,n) matrix per batch item. A batch size of 1 (or a 2-d
// operand) broadcasts over the other operand's batch.
func BatchMatMul(a, b *Tensor) *Tensor {
	a3, b3 := as3d(a), as3d(b)
	if a3 == nil || b3 == nil || a3.shape[2] != b3.shape[1] ||
		(a3.shape[0] != b3.shape[0] && a3.shape[0] != 1 && b3.shape[0] != 1) {
		panic(fmt.Sprintf("tensor.BatchMatMul: shapes %v and %v, want (batch,m,k) and (batch,k,n)", a.shape, b.shape))
	}
	batch := max(a3.shape[0], b3.shape[0])
	if a3.shape[0] == 0 || b3.shape[0] == 0 {
		batch = 0
	}
	be := sameBackend("BatchMatMul", a, b)
	out := empty(be, a.device, []int{batch, a3.shape[1], b3.shape[2]})
	BatchMatMulInto(out, a3, b3, 0)
	return out
}

// as3d returns t as a 3-d view, adding a batch axis of 1 to a 2-d tensor,
// or nil for other ranks.
func as3d(t *Tensor) *Tensor {
	switch t.NDim() {
	case 3:
		return t
	case 2:
		return &Tensor{shape: []int{1, t.shape[0], t.shape[1]}, strides: []int{0, t.strides[0], t.strides[1]},
			offset: t.offset, data: t.data, handle: t.handle, device: t.device}
	}
	return nil
}

type gemmLayout struct {
	trans bool
	ld    int
}

// gemmOperand returns the GEMM layout of the last two axes of t, copying t
// to a contiguous tensor when they are not a strided matrix.
func gemmOperand(t *Tensor) (gemmLayout, *Tensor) {
	nd := len(t.shape)
	r, c := t.shape[nd-2], t.shape[nd-1]
	if tr, ld, ok := matLayout(r, c, t.strides[nd-2], t.strides[nd-1]); ok {
		return gemmLayout{tr, ld}, t
	}
	t = t.Clone()
	return gemmLayout{false, max(c, 1)}, t
}

func matmulInto(name string, be Backend, dst, a, b *Tensor, beta float32) {
	m, k, n := a.shape[0], a.shape[1], b.shape[1]
	if m == 0 || n == 0 {
		return
	}
	ctr, ldc, ok := matLayout(m, n, dst.strides[0], dst.strides[1])
	if !ok {
		tmp := empty(be, dst.device, dst.shape)
		if beta != 0 {
			be.Unary(OpCopy, tmp.operand(), dst.operand(), 0)
		}
		matmulInto(name, be, tmp, a, b, beta)
		be.Unary(OpCopy, dst.operand(), tmp.operand(), 0)
		return
	}
	ga, a := gemmOperand(a)
	gb, b := gemmOperand(b)
	g := GemmArgs{
		TransA: ga.trans, TransB: gb.trans, M: m, N: n, K: k, Alpha: 1, Beta: beta,
		A: a.operand().Buf, B: b.operand().Buf, C: dst.operand().Buf,
		OffA: a.offset, OffB: b.offset, OffC: dst.offset, LDA: ga.ld, LDB: gb.ld, LDC: ldc, Batch: 1,
	}
	if ctr {
		// dst is stored transposed: compute dstᵀ = bᵀ aᵀ.
		g.TransA, g.TransB = !gb.trans, !ga.trans
		g.M, g.N = n, m
		g.A, g.B = g.B, g.A
		g.OffA, g.OffB = g.OffB, g.OffA
		g.LDA, g.LDB = g.LDB, g.LDA
	}
	be.Gemm(g)
}

// BatchMatMulInto computes dst[i] = a[i]@b[i] + beta*dst[i] for a
// (batch,m,k), b (batch,k,n) and dst (batch,m,n), as one batched GEMM. A
// batch size of 1 (or a 2-d operand) in a or b broadcasts. The last two
// axes of dst must be row-major (stride 1 along n); dst must not overlap a
// or b. With beta == 0 dst is not read.
func BatchMatMulInto(dst, a, b *Tensor, beta float32) {
	a3, b3 := as3d(a), as3d(b)
	if a3 == nil || b3 == nil || dst.NDim() != 3 || a3.shape[2] != b3.shape[1] ||
		(a3.shape[0] != dst.shape[0] && a3.shape[0] != 1) || (b3.shape[0] != dst.shape[0] && b3.shape[0] != 1) ||
		dst.shape[1] != a3.shape[1] || dst.shape[2] != b3.shape[2] {
		panic(fmt.Sprintf("tensor.BatchMatMulInto: shapes %v = %v @ %v, want (batch,m,n) = (batch,m,k) @ (batch,k,n)", dst.shape, a.shape, b.shape))
	}
	batch, m, k, n := dst.shape[0], a3.shape[1], a3.shape[2], b3.shape[2]
	be := sameBackend("BatchMatMulInto", dst, a, b)
	if batch == 0 || m == 0 || n == 0 {
		return
	}
	tr, ldc, ok := matLayout(m, n, dst.strides[1], dst.strides[2])
	if !ok || tr || (batch > 1 && dst.strides[0] == 0) {
		panic(fmt.Sprintf("tensor.BatchMatMulInto: destination strides %v are not row-major matrices", dst.strides))
	}
	ga, a3 := gemmOperand(a3)
	gb, b3 := gemmOperand(b3)
	sa, sb := a3.strides[0], b3.strides[0]
	if a3.shape[0] == 1 {
		sa = 0
	}
	if b3.shape[0] == 1 {
		sb = 0
	}
	be.Gemm(GemmArgs{
		TransA: ga.trans, TransB: gb.trans, M: m, N: n, K: k, Alpha: 1, Beta: beta,
		A: a3.operand().Buf, B: b3.operand().Buf, C: dst.operand().Buf,
		OffA: a3.offset, OffB: b3.offset, OffC: dst.offset, LDA: ga.ld, LDB: gb.ld, LDC: ldc,
		Batch: batch, StrideA: sa, StrideB: sb, StrideC: dst.strides[0],
	})
}
