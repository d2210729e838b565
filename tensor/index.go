package tensor

import "github.com/duel-ssl/duel/kernels/rows"

// IndexBackend is an optional capability of a Backend: the gather and
// scatter of one element per lane along an axis, with host indices (as
// ArgMax returns them). For a contiguous operand of shape (…, n, …) whose
// lanes along axis are numbered r = o*inner + j in row-major order over the
// other axes, TakeAlong sets dst[r] = src[o, idx[r], j] and PutAlong sets
// dst[o, idx[r], j] = src[r], leaving dst's other elements; dst of
// TakeAlong and src of PutAlong are contiguous with one element per lane.
// Indices are in [0, n). A backend without it still runs autograd's Max
// backward and CrossEntropy: package autograd then copies one element per
// index through Backend.Unary on one-element views.
type IndexBackend interface {
	// TakeAlong gathers dst[r] = src[o, idx[r], j].
	TakeAlong(dst, src Operand, axis int, idx []int)
	// PutAlong scatters dst[o, idx[r], j] = src[r].
	PutAlong(dst, src Operand, axis int, idx []int)
}

var _ IndexBackend = cpu{}

func (cpu) TakeAlong(dst, src Operand, axis int, idx []int) {
	rows.TakeAlong(src.Shape, axis, flat("TakeAlong", dst), flat("TakeAlong", src), idx)
}

func (cpu) PutAlong(dst, src Operand, axis int, idx []int) {
	rows.PutAlong(dst.Shape, axis, flat("PutAlong", dst), flat("PutAlong", src), idx)
}
