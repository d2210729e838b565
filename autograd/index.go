package autograd

import "github.com/duel-ssl/duel/tensor"

// The gather and scatter of one element per lane along an axis (Max's
// backward, CrossEntropy's targets), on their operands' device: the
// backend's tensor.IndexBackend when it has one (the CPU backend does, with
// the loops of kernels/rows), otherwise one Backend.Unary copy per index on
// one-element views, which gives the same bits. Every tensor passed in is
// contiguous.

// takeAlong returns src[o, idx[r], j] for every lane r along axis of the
// contiguous src, as a contiguous 1-d tensor on src's device.
func takeAlong(src *tensor.Tensor, axis int, idx []int) *tensor.Tensor {
	dst := tensor.ZerosOn(src.Device(), len(idx))
	be := src.Backend()
	if ib, ok := be.(tensor.IndexBackend); ok {
		ib.TakeAlong(dst.Operand(), src.Operand(), axis, idx)
		return dst
	}
	d, s := dst.Operand(), src.Operand()
	_, n, inner := splitAxis(src.Shape(), axis)
	for r, k := range idx {
		copyElem(be, d, r, s, (r/inner*n+k)*inner+r%inner)
	}
	return dst
}

// putAlong sets dst[o, idx[r], j] = src[r] for every lane r along axis of
// the contiguous dst; src is contiguous with one element per lane.
func putAlong(dst, src *tensor.Tensor, axis int, idx []int) {
	be := dst.Backend()
	if ib, ok := be.(tensor.IndexBackend); ok {
		ib.PutAlong(dst.Operand(), src.Operand(), axis, idx)
		return
	}
	d, s := dst.Operand(), src.Operand()
	_, n, inner := splitAxis(dst.Shape(), axis)
	for r, k := range idx {
		copyElem(be, d, (r/inner*n+k)*inner+r%inner, s, r)
	}
}

// copyElem copies element j of the contiguous operand src to element i of
// the contiguous operand dst with a one-element Backend.Unary copy.
func copyElem(be tensor.Backend, dst tensor.Operand, i int, src tensor.Operand, j int) {
	one, unit := []int{1}, []int{1}
	be.Unary(tensor.OpCopy,
		tensor.Operand{Buf: dst.Buf, Offset: dst.Offset + i, Shape: one, Strides: unit},
		tensor.Operand{Buf: src.Buf, Offset: src.Offset + j, Shape: one, Strides: unit}, 0)
}
