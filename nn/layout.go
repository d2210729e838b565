package nn

import (
	"github.com/duel-ssl/duel/tensor"
)

// Activations of shape (N, C, ...) come in two memory layouts. Both have
// the same shape and meaning; only the strides differ:
//
//   - NCHW: row-major, sample-major (the tensor package's contiguous layout);
//   - CNHW: channel-major, a Permute(1, 0, ...) view of a contiguous
//     (C, N, ...) tensor.
//
// Conv2d writes CNHW: the whole batch is then one GEMM operand (Cout x
// N*OH*OW), and BatchNorm finds each channel in one contiguous block.
// BatchNorm, ReLU and the pools keep their input's layout; callers who need
// NCHW data call Contiguous.

// isCNHW reports whether t, of rank >= 2, is stored channel-major and dense.
func isCNHW(t *tensor.Tensor) bool {
	sh, st := t.Shape(), t.Strides()
	if len(sh) < 2 {
		return false
	}
	s := 1
	for k := len(sh) - 1; k >= 2; k-- {
		if sh[k] != 1 && st[k] != s {
			return false
		}
		s *= sh[k]
	}
	return (sh[0] == 1 || st[0] == s) && (sh[1] == 1 || st[1] == sh[0]*s)
}

// storage returns the dense elements of a CNHW or contiguous tensor in
// memory order.
func storage(t *tensor.Tensor) []float32 {
	return t.Storage()[t.Offset() : t.Offset()+t.Numel()]
}

// planes returns t's elements in memory order and whether they are
// channel-major. Tensors in neither layout are copied to NCHW.
func planes(t *tensor.Tensor) ([]float32, bool) {
	if t.IsContiguous() {
		return t.Data(), false
	}
	if isCNHW(t) {
		return storage(t), true
	}
	return t.Contiguous().Data(), false
}

// newLayout returns a zero tensor of the given shape in CNHW (cm) or NCHW
// layout.
func newLayout(cm bool, shape ...int) *tensor.Tensor {
	if !cm || len(shape) < 2 {
		return tensor.New(shape...)
	}
	perm := append([]int{shape[1], shape[0]}, shape[2:]...)
	axes := make([]int, len(shape))
	for i := range axes {
		axes[i] = i
	}
	axes[0], axes[1] = 1, 0
	return tensor.New(perm...).Permute(axes...)
}

// inLayout returns the elements of t (shape (N, C, ...)) in the requested
// layout, copying only when t is stored otherwise.
func inLayout(t *tensor.Tensor, cm bool) []float32 {
	d, tcm := planes(t)
	if tcm == cm || t.NDim() < 2 || t.Dim(0) == 1 || t.Dim(1) == 1 {
		return d
	}
	out := make([]float32, len(d))
	permutePlanes(out, d, t.Dim(0), t.Dim(1), t.Numel()/max(t.Dim(0)*t.Dim(1), 1), tcm)
	return out
}

// permutePlanes copies the (n, c) planes of s elements of src, stored
// channel-major when srcCM, into dst in the other layout.
func permutePlanes(dst, src []float32, n, c, s int, srcCM bool) {
	for i := range n {
		for ch := range c {
			nc, cn := (i*c+ch)*s, (ch*n+i)*s
			if srcCM {
				copy(dst[nc:nc+s], src[cn:cn+s])
			} else {
				copy(dst[cn:cn+s], src[nc:nc+s])
			}
		}
	}
}
