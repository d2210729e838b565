package autograd

// LogSoftmax returns log-probabilities along axis, computed stably by
// subtracting the maximum.
//
//	yₖ = xₖ - m - ln Σⱼ exp(xⱼ - m),  m = maxⱼ xⱼ
//	∂L/∂xₖ = gₖ - softmax(x)ₖ·Σⱼ gⱼ
//
// When recording, the probabilities softmax(x) are kept for the backward
// pass (one more tensor of x's size) so that it computes no exponential.
func LogSoftmax(tp *Tape, x *Var, axis int) *Var {
	ax := normAxis("LogSoftmax", axis, x.Value.NDim())
	xv := x.Value.Contiguous()
	if !tp.Recording(x) {
		y, _ := logSoftmaxRows(xv, ax, false)
		return Const(y)
	}
	y, p := logSoftmaxRows(xv, ax, true)
	return tp.Record(y, func(out *Var) {
		AccumulateGradOwned(x, logSoftmaxBackRows(out.Grad.Contiguous(), p, ax))
	}, x)
}

// Softmax returns probabilities along axis, computed stably by subtracting
// the maximum.
//
//	yₖ = exp(xₖ - m) / Σⱼ exp(xⱼ - m),  m = maxⱼ xⱼ
//	∂L/∂xₖ = yₖ·(gₖ - Σⱼ gⱼ·yⱼ)
func Softmax(tp *Tape, x *Var, axis int) *Var {
	ax := normAxis("Softmax", axis, x.Value.NDim())
	y := softmaxRows(x.Value.Contiguous(), ax)
	return tp.Record(y, func(out *Var) {
		AccumulateGradOwned(x, softmaxBackRows(out.Grad.Contiguous(), out.Value.Contiguous(), ax))
	}, x)
}
