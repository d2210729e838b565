package cuda

import (
	"encoding/binary"
	"fmt"
)

// MaxDim is the largest rank of an index space the elementwise kernels
// walk (MAXDIM in elementwise.cu).
const MaxDim = 8

// Layout mirrors struct Layout of elementwise.cu: an index space of N
// elements (Shape, row-major) and up to three strided views of it (view 0
// is the destination), all in elements.
type Layout struct {
	N      int64
	Rank   int64
	Shape  [MaxDim]int64
	Off    [3]int64
	Stride [3][MaxDim]int64
}

// NewLayout returns the layout of shape with the given views (offset and
// strides, one stride per dimension). It fails on a rank above MaxDim or
// strides of the wrong length.
func NewLayout(shape []int, offs []int, strides ...[]int) (Layout, error) {
	var l Layout
	if len(shape) > MaxDim {
		return l, fmt.Errorf("cuda: rank %d, expected at most %d dimensions", len(shape), MaxDim)
	}
	if len(strides) > 3 || len(offs) != len(strides) {
		return l, fmt.Errorf("cuda: %d views with %d offsets, expected 1 to 3 of each", len(strides), len(offs))
	}
	l.N, l.Rank = 1, int64(len(shape))
	for d, s := range shape {
		if s < 0 {
			return l, fmt.Errorf("cuda: negative size %d in shape %v", s, shape)
		}
		l.Shape[d] = int64(s)
		l.N *= int64(s)
	}
	for v, st := range strides {
		if len(st) != len(shape) {
			return l, fmt.Errorf("cuda: view %d has %d strides for shape %v", v, len(st), shape)
		}
		l.Off[v] = int64(offs[v])
		for d, s := range st {
			l.Stride[v][d] = int64(s)
		}
	}
	return l, nil
}

// Bytes returns l as the kernel parameter block (little-endian int64s, the
// C struct's layout).
func (l Layout) Bytes() []byte {
	b := make([]byte, 0, 8*(2+MaxDim+3+3*MaxDim))
	put := func(v int64) { b = binary.LittleEndian.AppendUint64(b, uint64(v)) }
	put(l.N)
	put(l.Rank)
	for _, s := range l.Shape {
		put(s)
	}
	for _, o := range l.Off {
		put(o)
	}
	for _, st := range l.Stride {
		for _, s := range st {
			put(s)
		}
	}
	return b
}
