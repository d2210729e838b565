package cuda

import (
	"fmt"

	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.IndexBackend = (*Backend)(nil)

// alongGeom validates a TakeAlong/PutAlong: the lanes of shape along axis
// (one index per lane, each in [0, n)), the full operand full of shape
// and the one-per-lane operand lanes; it returns outer·inner, n and inner.
func (be *Backend) alongGeom(op string, shape []int, axis int, idx []int) (lanes, n, inner int) {
	o, n, inner, _ := rowsGeom(op, shape, axis)
	if len(idx) != o*inner {
		panic(fmt.Sprintf("cuda: Backend.%s: %d indices for the %d lanes of shape %v along axis %d", op, len(idx), o*inner, shape, axis))
	}
	for r, k := range idx {
		if k < 0 || k >= n {
			panic(fmt.Sprintf("cuda: Backend.%s: index %d of lane %d outside [0, %d)", op, k, r, n))
		}
	}
	return o * inner, n, inner
}

// TakeAlong gathers dst[r] = src[o, idx[r], j] (index.cu's take_along_f32,
// the indices copied to the device as int32).
func (be *Backend) TakeAlong(dst, src tensor.Operand, axis int, idx []int) {
	const op = "TakeAlong"
	lanes, n, inner := be.alongGeom(op, src.Shape, axis, idx)
	sp := be.dense(op, "src", src, elems(src))
	dp := be.dense(op, "dst", dst, lanes)
	if lanes == 0 {
		return
	}
	s := &scratch{mem: be.mem}
	defer s.release()
	ip := be.deviceTargets(op, s, idx)
	be.queued(op, kc.TakeAlongF32(be.g, be.grid(int64(lanes)), dp, sp, ip, int64(lanes), int64(n), int64(inner)))
}

// PutAlong scatters dst[o, idx[r], j] = src[r], leaving dst's other
// elements (put_along_f32).
func (be *Backend) PutAlong(dst, src tensor.Operand, axis int, idx []int) {
	const op = "PutAlong"
	lanes, n, inner := be.alongGeom(op, dst.Shape, axis, idx)
	dp := be.dense(op, "dst", dst, elems(dst))
	sp := be.dense(op, "src", src, lanes)
	if lanes == 0 {
		return
	}
	s := &scratch{mem: be.mem}
	defer s.release()
	ip := be.deviceTargets(op, s, idx)
	be.queued(op, kc.PutAlongF32(be.g, be.grid(int64(lanes)), dp, sp, ip, int64(lanes), int64(n), int64(inner)))
}
