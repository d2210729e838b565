package autograd

import (
	"github.com/duel-ssl/duel/tensor"
)

// The row operations (softmax, log-softmax, L2 normalisation,
// cross-entropy), on their operands' device. Each runs the backend's
// tensor.RowsBackend when it has one (the CPU backend does, with the loops
// of kernels/rows) and is otherwise composed of core backend operations:
// the fallbacks round every step to float32 (the maximum, x - max, its
// exponential, the float32 sum, the quotient) where the CPU kernels sum in
// float64 and normalise by one inverse, so they agree with the capability
// to a few float32 ulps of the results, not bit for bit. Every tensor
// passed in is contiguous.

// rowsOf returns t's backend's row capability, or nil.
func rowsOf(t *tensor.Tensor) tensor.RowsBackend {
	rb, _ := t.Backend().(tensor.RowsBackend)
	return rb
}

// zerosLike returns a zero tensor of t's shape on t's device.
func zerosLike(t *tensor.Tensor) *tensor.Tensor { return tensor.ZerosOn(t.Device(), t.Shape()...) }

// operandOf returns t's operand, or the zero Operand for nil.
func operandOf(t *tensor.Tensor) tensor.Operand {
	if t == nil {
		return tensor.Operand{}
	}
	return t.Operand()
}

// softmaxRows returns softmax(x) along axis.
func softmaxRows(x *tensor.Tensor, axis int) *tensor.Tensor {
	if rb := rowsOf(x); rb != nil {
		y := zerosLike(x)
		rb.Softmax(y.Operand(), x.Operand(), axis)
		return y
	}
	e := tensor.Exp(tensor.Sub(x, tensor.Max(x, axis, true)))
	return tensor.Div(e, tensor.Sum(e, axis, true))
}

// softmaxBackRows returns y·(g - Σ g·y) along axis.
func softmaxBackRows(g, y *tensor.Tensor, axis int) *tensor.Tensor {
	if rb := rowsOf(g); rb != nil {
		dx := zerosLike(g)
		rb.SoftmaxBack(dx.Operand(), g.Operand(), y.Operand(), axis)
		return dx
	}
	return tensor.Mul(y, tensor.Sub(g, tensor.Sum(tensor.Mul(g, y), axis, true)))
}

// logSoftmaxRows returns log softmax(x) along axis and, when withP is set,
// softmax(x).
func logSoftmaxRows(x *tensor.Tensor, axis int, withP bool) (y, p *tensor.Tensor) {
	if rb := rowsOf(x); rb != nil {
		y = zerosLike(x)
		if withP {
			p = zerosLike(x)
		}
		rb.LogSoftmax(y.Operand(), operandOf(p), x.Operand(), axis)
		return y, p
	}
	z := tensor.Sub(x, tensor.Max(x, axis, true))
	e := tensor.Exp(z)
	s := tensor.Sum(e, axis, true)
	y = tensor.Sub(z, tensor.Log(s))
	if withP {
		p = tensor.Div(e, s)
	}
	return y, p
}

// logSoftmaxBackRows returns g - p·Σg along axis.
func logSoftmaxBackRows(g, p *tensor.Tensor, axis int) *tensor.Tensor {
	if rb := rowsOf(g); rb != nil {
		dx := zerosLike(g)
		rb.LogSoftmaxBack(dx.Operand(), g.Operand(), p.Operand(), axis)
		return dx
	}
	return tensor.Sub(g, tensor.Mul(p, tensor.Sum(g, axis, true)))
}

// l2Norms returns ‖x‖₂ along axis (kept with size 1) and max(‖x‖₂, ε).
func l2Norms(x *tensor.Tensor, axis int) (norm, d *tensor.Tensor) {
	norm = tensor.Sqrt(tensor.Sum(tensor.Square(x), axis, true))
	return norm, tensor.Maximum(norm, fullOn(x.Device(), L2NormEps, norm.Shape()))
}

// l2NormalizeRows returns x / max(‖x‖₂, ε) along axis.
func l2NormalizeRows(x *tensor.Tensor, axis int) *tensor.Tensor {
	if rb := rowsOf(x); rb != nil {
		y := zerosLike(x)
		rb.L2Normalize(y.Operand(), x.Operand(), axis, L2NormEps)
		return y
	}
	_, d := l2Norms(x, axis)
	return tensor.Div(x, d)
}

// l2NormalizeBackRows returns (g - y·Σ g·y) / d along axis, or g / ε where
// ‖x‖₂ <= ε.
func l2NormalizeBackRows(g, x, y *tensor.Tensor, axis int) *tensor.Tensor {
	if rb := rowsOf(g); rb != nil {
		dx := zerosLike(g)
		rb.L2NormalizeBack(dx.Operand(), g.Operand(), x.Operand(), y.Operand(), axis, L2NormEps)
		return dx
	}
	norm, d := l2Norms(x, axis)
	// [‖x‖₂ > ε] as 1 or 0: the sign of max(‖x‖₂ - ε, 0).
	above := tensor.Sign(tensor.Relu(tensor.AddScalar(norm, -L2NormEps)))
	sgy := tensor.Mul(above, tensor.Sum(tensor.Mul(g, y), axis, true))
	return tensor.Div(tensor.Sub(g, tensor.Mul(y, sgy)), d)
}

// crossEntropyRows returns the mean cross-entropy of the n×c logits x
// against targets as a 0-d tensor and, when withP is set, the rows'
// softmax.
func crossEntropyRows(x *tensor.Tensor, targets []int, withP bool) (loss, p *tensor.Tensor) {
	if rb := rowsOf(x); rb != nil {
		loss = tensor.ZerosOn(x.Device())
		if withP {
			p = zerosLike(x)
		}
		rb.CrossEntropy(loss.Operand(), operandOf(p), x.Operand(), targets)
		return loss, p
	}
	z := tensor.Sub(x, tensor.Max(x, 1, true))
	e := tensor.Exp(z)
	s := tensor.Sum(e, 1, true)
	// nllᵢ = ln sᵢ - zᵢ,ₜᵢ
	nll := tensor.Sub(tensor.Log(s).Reshape(len(targets)), takeAlong(z, 1, targets))
	loss = tensor.Mean(nll, 0, false)
	if withP {
		p = tensor.Div(e, s)
	}
	return loss, p
}

// crossEntropyBackRows turns the probabilities p into the gradient in
// place: pᵢⱼ = (pᵢⱼ - [j = tᵢ])·scale.
func crossEntropyBackRows(p *tensor.Tensor, targets []int, scale float32) {
	if rb := rowsOf(p); rb != nil {
		rb.CrossEntropyBack(p.Operand(), targets, scale)
		return
	}
	putAlong(p, tensor.AddScalar(takeAlong(p, 1, targets), -1), 1, targets)
	p.ScaleInPlace(scale)
}
