package tensor

import (
	"fmt"
	"unsafe"

	"github.com/duel-ssl/duel/kernels/topk"
)

// TopKBackend is an optional capability of a Backend: the k largest
// elements of each row of a matrix, selected on the device so that only
// the m×k results leave it (duel/eval's kNN neighbours). The order is
// kernels/topk's: a larger value first, equal values (-0 equal to +0) by
// increasing column, NaN below every number. A backend without it still
// gets the results: TopK copies the matrix to the host and runs
// kernels/topk there. The CPU backend runs kernels/topk.Rows (rows in
// parallel); the CUDA backend runs kernels/cuda/topk.cu.
type TopKBackend interface {
	// TopK sets, for each row i of the dense m×n x (0 < k <= n),
	// vals[i, 0..k) to the row's k first elements in the order (their
	// bits unchanged) and idx[i, j] to the column of vals[i, j], an int32
	// stored in the bits of idx's element (as PoolBackend's arg). vals and
	// idx are dense m×k operands on the backend.
	TopK(vals, idx, x Operand, k int)
}

var _ TopKBackend = cpu{}

func (cpu) TopK(vals, idx, x Operand, k int) {
	if len(x.Shape) != 2 {
		panic(fmt.Sprintf("tensor: cpu backend: TopK: x of shape %v, want a matrix", x.Shape))
	}
	m, n := x.Shape[0], x.Shape[1]
	v, ix := flat("TopK", vals), indices("TopK", idx)
	if len(v) != m*k || len(ix) != m*k {
		panic(fmt.Sprintf("tensor: cpu backend: TopK: vals of shape %v and idx of shape %v for %d rows and k %d", vals.Shape, idx.Shape, m, k))
	}
	topk.Rows(m, n, k, flat("TopK", x), v, ix)
}

// TopK returns, on the host, the k largest elements of each row of the
// m×n matrix x (on any device; 0 <= k <= n) and their columns, row-major
// m×k, in kernels/topk's order (larger first, ties by lower column, NaN
// last). Where x's backend is a TopKBackend the selection runs there and
// only the results are copied out; elsewhere x is copied to the host and
// selected by kernels/topk.Rows (the same results). A device failure is
// returned as its *DeviceError.
func TopK(x *Tensor, k int) (vals []float32, idx []int32, err error) {
	if x.NDim() != 2 || k < 0 || k > x.shape[1] || x.shape[1] > topk.MaxN {
		panic(fmt.Sprintf("tensor: TopK: k %d of a tensor of shape %v (want a matrix, 0 <= k <= columns < 2^31)", k, x.shape))
	}
	m, n := x.shape[0], x.shape[1]
	if m == 0 || k == 0 {
		return []float32{}, []int32{}, nil
	}
	if x.device == CPU || x.device == "" {
		vals, idx = make([]float32, m*k), make([]int32, m*k)
		topk.Rows(m, n, k, x.Contiguous().Data(), vals, idx)
		return vals, idx, nil
	}
	be := backendOf("TopK", x)
	tb, ok := be.(TopKBackend)
	if !ok {
		var h *Tensor
		if err := CatchDeviceError(func() { h, err = x.To(CPU) }); err != nil {
			return nil, nil, err
		}
		if err != nil {
			return nil, nil, err
		}
		return TopK(h, k)
	}
	vals, bits := make([]float32, m*k), make([]float32, m*k)
	err = CatchDeviceError(func() {
		c := x
		if !x.IsContiguous() {
			c = empty(be, x.device, x.shape)
			be.Unary(OpCopy, c.operand(), x.operand(), 0)
			defer c.Release()
		}
		dv, di := empty(be, x.device, []int{m, k}), empty(be, x.device, []int{m, k})
		defer dv.Release()
		defer di.Release()
		tb.TopK(dv.operand(), di.operand(), c.operand(), k)
		be.CopyOut(vals, dv.operand().Buf, 0)
		be.CopyOut(bits, di.operand().Buf, 0)
	})
	if err != nil {
		return nil, nil, err
	}
	return vals, unsafe.Slice((*int32)(unsafe.Pointer(&bits[0])), len(bits)), nil
}
