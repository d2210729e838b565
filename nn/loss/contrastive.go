package loss

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// ContrastiveOptions configures InfoNCE and NTXent.
type ContrastiveOptions struct {
	// Tau is the temperature τ > 0 (the paper uses 0.5).
	Tau float64
	// Eps is the weight ε ∈ [0, 1] of the positive pair in the denominator
	// (paper Eq. 17): 1 is the standard InfoNCE/NT-Xent (cross-entropy with
	// the positive as the target class), 0 removes the positive from the
	// denominator (decoupled contrastive form).
	Eps float64
	// BatchNegatives adds the other samples of the batch as negatives. For
	// InfoNCE these are the keys kⱼ, j ≠ i ("batch" or "mixed" negatives);
	// for NTXent the 2B-2 other views, as SimCLR does. Without it only the
	// rows of the negatives matrix are negatives ("memory" negatives).
	BatchNegatives bool
}

func (o ContrastiveOptions) check(op string) {
	if !(o.Tau > 0) || math.IsInf(o.Tau, 0) {
		panic(fmt.Sprintf("loss.%s: temperature %v, expected a finite value > 0", op, o.Tau))
	}
	if !(o.Eps >= 0 && o.Eps <= 1) {
		panic(fmt.Sprintf("loss.%s: eps %v, expected a value in [0, 1]", op, o.Eps))
	}
}

// InfoNCE is the general InfoNCE of the paper's Appendix B (Eq. 17) for
// queries q (B, D) and their positive keys k (B, D):
//
//	Lᵢ = -log( exp(sᵢ⁺) / (ε·exp(sᵢ⁺) + Σₙ exp(sᵢₙ)) )
//	   = -sᵢ⁺ + log( ε·exp(sᵢ⁺) + Σₙ exp(sᵢₙ) ),     L = (1/B) Σᵢ Lᵢ
//
// with sᵢ⁺ = qᵢ·kᵢ/τ and sᵢₙ = qᵢ·nₙ/τ over the negatives n: the rows of
// negatives (N, D), plus the other keys kⱼ (j ≠ i) when
// opt.BatchNegatives. The paper's bound also subtracts the constant log K,
// which changes no gradient and is left out. With ε = 1 this is the usual
// cross-entropy over the logits [qᵢ·kᵢ/τ | qᵢ·nᵀ/τ] with the positive at
// index 0 (MoCo); with ε = 0 the positive leaves the denominator.
//
// q, k and negatives are expected to be L2-normalised already (apply
// autograd.L2Normalize first); the loss does not normalise them. negatives
// may be nil and is always a constant (stop-gradient, as for the paper's
// memory): no gradient is computed for it. Gradients flow into q and, when
// it requires one, k (MoCo's key encoder output is usually detached). At
// least one negative is needed when ε = 0.
//
// It computes on the inputs' device (negatives must live there too): with
// its backend's tensor.ContrastiveBackend (the CPU's: kernels/loss, the
// logits and gradients by kernels/gemm, a float64 log-sum-exp per row)
// when it has one, else composed of autograd operations (MatMul, Concat,
// an additive mask, Exp, Sum, Log; contrastive_composed.go) in float32.
func InfoNCE(tp *autograd.Tape, q, k, negatives *autograd.Var, opt ContrastiveOptions) *autograd.Var {
	const op = "InfoNCE"
	opt.check(op)
	b, d := dims2(op, "q", q)
	bk, dk := dims2(op, "k", k)
	if bk != b || dk != d {
		panic(fmt.Sprintf("loss.InfoNCE: q has shape %v but k has shape %v", q.Shape(), k.Shape()))
	}
	nv, n := negativesOf(op, negatives, d)
	checkBatch(op, b, b-1, n, opt)
	qv, kv := q.Value.Contiguous(), k.Value.Contiguous()
	cb, ok := qv.Backend().(tensor.ContrastiveBackend)
	if !ok {
		return infoNCEComposed(tp, q, k, nv, opt)
	}
	dev := qv.Device()
	loss, gs, ge := tensor.ZerosOn(dev), tensor.ZerosOn(dev, b, b), optZeros(dev, b, n)
	cb.InfoNCE(loss.Operand(), gs.Operand(), operandOf(ge), qv.Operand(), kv.Operand(), operandOf(nv), opt.args())
	return tp.Record(loss, func(out *autograd.Var) {
		var gq, gk *tensor.Tensor
		if q.RequiresGrad {
			gq = tensor.ZerosOn(dev, b, d)
		}
		if k.RequiresGrad {
			gk = tensor.ZerosOn(dev, b, d)
		}
		cb.InfoNCEBack(operandOf(gq), operandOf(gk), gs.Operand(), operandOf(ge), qv.Operand(), kv.Operand(),
			operandOf(nv), out.Grad.Contiguous().Operand(), opt.Tau)
		if gq != nil {
			autograd.AccumulateGradOwned(q, gq)
		}
		if gk != nil {
			autograd.AccumulateGradOwned(k, gk)
		}
	}, q, k)
}

// NTXent is SimCLR's normalised temperature-scaled cross-entropy for two
// views z1, z2 (B, D). With z = [z1; z2] (2B rows), each row a is an
// anchor whose positive is the other view of the same sample, p(a) = a ± B:
//
//	Lₐ = -sₐ,p(a) + log( ε·exp(sₐ,p(a)) + Σₙ exp(sₐₙ) ),   L = (1/2B) Σₐ Lₐ
//
// with sₐⱼ = zₐ·zⱼ/τ. The negatives n are the 2B-2 other rows of z (the
// anchor's self-similarity is masked out) when opt.BatchNegatives, plus the
// rows of negatives (N, D), D-SimCLR's memory negatives, always constants.
// With ε = 1 and BatchNegatives this is exactly SimCLR's loss; the extra
// negatives are appended to every anchor's denominator. Inputs are
// expected to be L2-normalised; the loss does not normalise them.
//
// Like InfoNCE it computes on the inputs' device, fused or composed.
func NTXent(tp *autograd.Tape, z1, z2, negatives *autograd.Var, opt ContrastiveOptions) *autograd.Var {
	const op = "NTXent"
	opt.check(op)
	b, d := dims2(op, "z1", z1)
	b2, dd := dims2(op, "z2", z2)
	if b2 != b || dd != d {
		panic(fmt.Sprintf("loss.NTXent: z1 has shape %v but z2 has shape %v", z1.Shape(), z2.Shape()))
	}
	nv, n := negativesOf(op, negatives, d)
	checkBatch(op, 2*b, 2*b-2, n, opt)
	cb, ok := z1.Value.Backend().(tensor.ContrastiveBackend)
	if !ok {
		return ntXentComposed(tp, z1, z2, nv, opt)
	}
	m := 2 * b
	z := tensor.Concat(0, z1.Value, z2.Value)
	dev := z.Device()
	loss, gs, ge := tensor.ZerosOn(dev), tensor.ZerosOn(dev, m, m), optZeros(dev, m, n)
	cb.NTXent(loss.Operand(), gs.Operand(), operandOf(ge), z.Operand(), operandOf(nv), opt.args())
	return tp.Record(loss, func(out *autograd.Var) {
		dz := tensor.ZerosOn(dev, m, d)
		cb.NTXentBack(dz.Operand(), gs.Operand(), operandOf(ge), z.Operand(), operandOf(nv),
			out.Grad.Contiguous().Operand(), opt.Tau)
		// The two halves of dz are disjoint: each view may own its own.
		autograd.AccumulateGradOwned(z1, dz.Slice(0, 0, b))
		autograd.AccumulateGradOwned(z2, dz.Slice(0, b, m))
	}, z1, z2)
}

// args returns the options as the backends take them.
func (o ContrastiveOptions) args() tensor.ContrastArgs {
	return tensor.ContrastArgs{Tau: o.Tau, Eps: o.Eps, BatchNegatives: o.BatchNegatives}
}

// negativesOf returns the contiguous value and the row count of an
// optional negatives matrix: nil and 0 when it is nil or has no rows.
func negativesOf(op string, negatives *autograd.Var, d int) (*tensor.Tensor, int) {
	if negatives == nil {
		return nil, 0
	}
	n, dn := dims2(op, "negatives", negatives)
	if n == 0 {
		return nil, 0
	}
	if dn != d {
		panic(fmt.Sprintf("loss.%s: negatives have shape %v, expected (N, %d)", op, negatives.Shape(), d))
	}
	return negatives.Value.Contiguous(), n
}

// checkBatch panics on an empty batch of rows anchors and when ε = 0
// leaves an anchor without a negative (batch are its batch negatives when
// opt.BatchNegatives, n the memory negatives).
func checkBatch(op string, rows, batch, n int, opt ContrastiveOptions) {
	if rows == 0 {
		panic(fmt.Sprintf("loss.%s: empty batch", op))
	}
	negCount := n
	if opt.BatchNegatives {
		negCount += batch
	}
	if opt.Eps == 0 && negCount <= 0 {
		panic(fmt.Sprintf("loss.%s: eps = 0 needs at least one negative (batch negatives off, %d memory negatives)", op, n))
	}
}

// optZeros returns a rows×n zero matrix on dev, or nil when n is 0.
func optZeros(dev tensor.Device, rows, n int) *tensor.Tensor {
	if n == 0 {
		return nil
	}
	return tensor.ZerosOn(dev, rows, n)
}

// operandOf returns t's operand, or the zero Operand for a nil t.
func operandOf(t *tensor.Tensor) tensor.Operand {
	if t == nil {
		return tensor.Operand{}
	}
	return t.Operand()
}
