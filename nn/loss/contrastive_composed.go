package loss

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// infoNCEComposed is InfoNCE composed of autograd operations on the
// inputs' device, for a backend without tensor.ContrastiveBackend: query
// i's positive is key i (the diagonal of q·kᵀ), the other keys are its
// batch negatives when opt.BatchNegatives. neg is the contiguous value of
// the negatives, or nil.
func infoNCEComposed(tp *autograd.Tape, q, k *autograd.Var, neg *tensor.Tensor, opt ContrastiveOptions) *autograd.Var {
	b := q.Value.Dim(0)
	pos := make([]int, b)
	for i := range pos {
		pos[i] = i
	}
	return contrastComposed(tp, q, k, neg, pos, nil, opt)
}

// ntXentComposed is NTXent composed of autograd operations on the inputs'
// device, for a backend without tensor.ContrastiveBackend: z = [z1; z2] is
// both the anchors and the candidates, anchor a's positive is row a ± B
// and its own row is never a negative.
func ntXentComposed(tp *autograd.Tape, z1, z2 *autograd.Var, neg *tensor.Tensor, opt ContrastiveOptions) *autograd.Var {
	b := z1.Value.Dim(0)
	m := 2 * b
	pos, self := make([]int, m), make([]int, m)
	for a := range m {
		pos[a] = (a + b) % m
		self[a] = a
	}
	z := autograd.Concat(tp, 0, z1, z2)
	return contrastComposed(tp, z, z, neg, pos, self, opt)
}

// contrastComposed returns the mean over the anchors x (rows, D) of
//
//	-s⁺ + log( ε·exp(s⁺) + Σ exp(s⁻) ) = LSEⱼ(Lᵣⱼ) - s⁺
//
// with s = x·cᵀ/τ against the candidates c (cands, D), s⁺ = s[r, pos[r]],
// and L = [s + M | x·negᵀ/τ]: the additive mask M holds log ε at the
// positive, -Inf at self[r] (when self is non-nil) and at every other
// candidate unless opt.BatchNegatives, 0 elsewhere, so that exp(L) is
// ε·exp(s⁺), 0 or exp(s⁻). The log-sum-exp subtracts each row's largest
// entry (a constant: it changes no gradient), which is finite since the
// caller checked that every anchor has a negative or ε > 0. Exp's
// gradient at the masked entries is exp(-Inf) = 0, so nothing flows
// through them. Everything is float32 on the device.
func contrastComposed(tp *autograd.Tape, x, c *autograd.Var, neg *tensor.Tensor, pos, self []int,
	opt ContrastiveOptions) *autograd.Var {
	rows, cands := x.Value.Dim(0), c.Value.Dim(0)
	dev := x.Value.Device()
	invTau := float32(1 / opt.Tau)
	s := autograd.MulScalar(tp, autograd.MatMul(tp, x, autograd.Transpose(tp, c, 0, 1)), invTau)

	inf := float32(math.Inf(-1))
	other := inf
	if opt.BatchNegatives {
		other = 0
	}
	mask := tensor.Full(other, rows, cands)
	onehot := tensor.New(rows, cands)
	for r, p := range pos {
		if self != nil {
			mask.Set(inf, r, self[r])
		}
		mask.Set(float32(math.Log(opt.Eps)), r, p)
		onehot.Set(1, r, p)
	}
	logits := autograd.Add(tp, s, constOn(mask, dev))
	if neg != nil {
		e := autograd.MulScalar(tp, autograd.MatMul(tp, x, autograd.Const(neg.Transpose(0, 1))), invTau)
		logits = autograd.Concat(tp, 1, logits, e)
	}
	top := autograd.Const(tensor.Max(logits.Value, 1, true))
	lse := autograd.Add(tp, autograd.Log(tp, autograd.Sum(tp,
		autograd.Exp(tp, autograd.Sub(tp, logits, top)), 1, true)), top)
	positive := autograd.Sum(tp, autograd.Mul(tp, s, constOn(onehot, dev)), 1, true)
	return autograd.MeanAll(tp, autograd.Sub(tp, lse, positive))
}

// constOn returns the host tensor t copied to dev as a constant.
func constOn(t *tensor.Tensor, dev tensor.Device) *autograd.Var {
	v, err := t.To(dev)
	if err != nil {
		panic(fmt.Sprintf("loss: moving a constant to %s: %v", dev, err))
	}
	return autograd.Const(v)
}
