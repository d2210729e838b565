package cuda

import (
	"fmt"

	"github.com/duel-ssl/duel/cuda/driver"

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
	be.along("TakeAlong", dst, src, axis, idx, false)
}

// PutAlong scatters dst[o, idx[r], j] = src[r], leaving dst's other
// elements (put_along_f32).
func (be *Backend) PutAlong(dst, src tensor.Operand, axis int, idx []int) {
	be.along("PutAlong", dst, src, axis, idx, true)
}

// along launches take_along_f32 (put false: the lanes are dst's, indexed
// into src) or put_along_f32 (put: the lanes are src's, indexed into dst).
func (be *Backend) along(op string, dst, src tensor.Operand, axis int, idx []int, put bool) {
	indexed := src
	if put {
		indexed = dst
	}
	lanes, n, inner := be.alongGeom(op, indexed.Shape, axis, idx)
	var dp, sp driver.DevicePtr
	if put {
		dp, sp = be.dense(op, "dst", dst, elems(dst)), be.dense(op, "src", src, lanes)
	} else {
		sp, dp = be.dense(op, "src", src, elems(src)), be.dense(op, "dst", dst, lanes)
	}
	if lanes == 0 {
		return
	}
	s := &scratch{mem: be.mem}
	defer s.release()
	ip := be.deviceTargets(op, s, idx)
	launch := kc.TakeAlongF32
	if put {
		launch = kc.PutAlongF32
	}
	be.queued(op, launch(be.g, be.grid(int64(lanes)), dp, sp, ip, int64(lanes), int64(n), int64(inner)))
}
