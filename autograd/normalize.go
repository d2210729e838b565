package autograd

// L2NormEps is the lower bound on the norm in L2Normalize (PyTorch's
// F.normalize default).
const L2NormEps = 1e-12

// L2Normalize divides x by its Euclidean norm along axis, with the norm
// bounded below by L2NormEps (F.normalize semantics).
//
//	yₖ = xₖ / d,  d = max(‖x‖₂, ε)
//	∂L/∂xₖ = (gₖ - yₖ·Σⱼ gⱼyⱼ) / d   when ‖x‖₂ > ε,  gₖ / ε otherwise
//
// The backward pass recomputes d from x.
func L2Normalize(tp *Tape, x *Var, axis int) *Var {
	ax := normAxis("L2Normalize", axis, x.Value.NDim())
	xv := x.Value.Contiguous()
	y := l2NormalizeRows(xv, ax)
	return tp.Record(y, func(out *Var) {
		AccumulateGradOwned(x, l2NormalizeBackRows(out.Grad.Contiguous(), xv, out.Value.Contiguous(), ax))
	}, x)
}
