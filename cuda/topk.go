package cuda

import (
	"fmt"
	"math"
	"unsafe"

	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/kernels/topk"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.TopKBackend = (*Backend)(nil)

// TopKMax is the largest k that topk.cu selects on the device (its shared
// candidates); for a larger k, TopK copies the matrix to the host and runs
// kernels/topk there (the same results).
const TopKMax = 1024

// TopK sets, for each row of the dense m×n x, vals to its k largest
// elements in kernels/topk's order and idx to their columns (int32 in the
// elements' bits): topk.cu's topk_rows_f32, one block per row (grid-stride
// over rows), a radix select of the k-th key then a bitonic sort of the k
// in shared memory. The CPU's results bit for bit, ties included.
func (be *Backend) TopK(vals, idx, x tensor.Operand, k int) {
	const op = "TopK"
	if len(x.Shape) != 2 || k < 0 || k > x.Shape[1] || x.Shape[1] > math.MaxInt32 {
		panic(fmt.Sprintf("cuda: Backend.%s: k %d of x of shape %v (want a matrix, 0 <= k <= n < 2^31)", op, k, x.Shape))
	}
	m, n := x.Shape[0], x.Shape[1]
	xp := be.dense(op, "x", x, m*n)
	vp, ip := be.dense(op, "vals", vals, m*k), be.dense(op, "idx", idx, m*k)
	if m == 0 || k == 0 {
		return
	}
	if k > TopKMax {
		h := make([]float32, m*n)
		be.CopyOut(h, x.Buf, x.Offset)
		hv, hi := make([]float32, m*k), make([]int32, m*k)
		topk.Rows(m, n, k, h, hv, hi)
		be.CopyIn(vals.Buf, vals.Offset, hv)
		be.CopyIn(idx.Buf, idx.Offset, unsafe.Slice((*float32)(unsafe.Pointer(&hi[0])), len(hi)))
		return
	}
	be.queued(op, kc.TopkRowsF32(be.g, be.lanes(m), vp, ip, xp, int64(m), int64(n), int32(k)))
}
