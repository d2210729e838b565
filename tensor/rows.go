package tensor

import "github.com/duel-ssl/duel/kernels/rows"

// RowsBackend is an optional capability of a Backend: the row operations of
// package autograd, forward and backward, along one axis of contiguous
// operands that all have the shape of x (CrossEntropy's are n×c, with one
// host target per row). A backend without it still runs them: package
// autograd then composes each from core Backend operations (max, subtract,
// exp, sum, divide), in float32. The CPU backend computes them with the
// loops of package kernels/rows: sums in float64, one exponential per
// element, the softmax normalised by a float32 inverse of the float64 sum.
type RowsBackend interface {
	// Softmax sets y = softmax(x) along axis.
	Softmax(y, x Operand, axis int)
	// SoftmaxBack sets dx = y·(g - Σ g·y) along axis.
	SoftmaxBack(dx, g, y Operand, axis int)
	// LogSoftmax sets y = log softmax(x) along axis and, unless p is the
	// zero Operand, p = softmax(x).
	LogSoftmax(y, p, x Operand, axis int)
	// LogSoftmaxBack sets dx = g - p·Σg along axis.
	LogSoftmaxBack(dx, g, p Operand, axis int)
	// L2Normalize sets y = x / max(‖x‖₂, eps) along axis.
	L2Normalize(y, x Operand, axis int, eps float64)
	// L2NormalizeBack sets dx = (g - y·Σ g·y) / d along axis with
	// d = max(‖x‖₂, eps), or g / eps where ‖x‖₂ <= eps.
	L2NormalizeBack(dx, g, x, y Operand, axis int, eps float64)
	// CrossEntropy sets the one element of loss to the mean over the rows
	// of the n×c logits x of ln Σⱼ exp(xᵢⱼ) - xᵢ,ₜᵢ (NaN for n = 0) and,
	// unless p is the zero Operand, p to the rows' softmax.
	CrossEntropy(loss, p, x Operand, targets []int)
	// CrossEntropyBack turns the n×c probabilities p into the loss's
	// gradient in place: pᵢⱼ = (pᵢⱼ - [j = tᵢ])·scale.
	CrossEntropyBack(p Operand, targets []int, scale float32)
}

var _ RowsBackend = cpu{}

// IsZeroOperand reports whether o is the zero Operand (an absent optional
// operand).
func IsZeroOperand(o Operand) bool {
	return o.Buf.Host == nil && o.Buf.Dev == nil && o.Shape == nil && o.Strides == nil && o.Offset == 0
}

// flatOpt returns flat(o), or nil for the zero Operand.
func flatOpt(op string, o Operand) []float32 {
	if IsZeroOperand(o) {
		return nil
	}
	return flat(op, o)
}

func (cpu) Softmax(y, x Operand, axis int) {
	rows.Softmax(x.Shape, axis, flat("Softmax", y), flat("Softmax", x))
}

func (cpu) SoftmaxBack(dx, g, y Operand, axis int) {
	rows.SoftmaxBack(g.Shape, axis, flat("SoftmaxBack", dx), flat("SoftmaxBack", g), flat("SoftmaxBack", y))
}

func (cpu) LogSoftmax(y, p, x Operand, axis int) {
	rows.LogSoftmax(x.Shape, axis, flat("LogSoftmax", y), flatOpt("LogSoftmax", p), flat("LogSoftmax", x))
}

func (cpu) LogSoftmaxBack(dx, g, p Operand, axis int) {
	rows.LogSoftmaxBack(g.Shape, axis, flat("LogSoftmaxBack", dx), flat("LogSoftmaxBack", g), flat("LogSoftmaxBack", p))
}

func (cpu) L2Normalize(y, x Operand, axis int, eps float64) {
	rows.L2Normalize(x.Shape, axis, flat("L2Normalize", y), flat("L2Normalize", x), eps)
}

func (cpu) L2NormalizeBack(dx, g, x, y Operand, axis int, eps float64) {
	rows.L2NormalizeBack(x.Shape, axis, flat("L2NormalizeBack", dx), flat("L2NormalizeBack", g),
		flat("L2NormalizeBack", x), flat("L2NormalizeBack", y), eps)
}

func (cpu) CrossEntropy(loss, p, x Operand, targets []int) {
	n, c := x.Shape[0], x.Shape[1]
	l := rows.CrossEntropy(n, c, flatOpt("CrossEntropy", p), flat("CrossEntropy", x), targets)
	loss.Buf.Host[loss.Offset] = float32(l)
}

func (cpu) CrossEntropyBack(p Operand, targets []int, scale float32) {
	rows.CrossEntropyBack(p.Shape[0], p.Shape[1], flat("CrossEntropyBack", p), targets, scale)
}
