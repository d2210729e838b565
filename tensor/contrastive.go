package tensor

import kloss "github.com/duel-ssl/duel/kernels/loss"

// ContrastArgs configures the contrastive losses of a ContrastiveBackend:
// the temperature Tau > 0, the weight Eps ∈ [0, 1] of the positive in the
// denominator, and whether the other samples of the batch are negatives
// (BatchNegatives). It is kernels/loss's.
type ContrastArgs = kloss.ContrastArgs

// ContrastiveBackend is an optional capability of a Backend: the fused
// contrastive losses of package nn/loss (InfoNCE, NT-Xent), forward and
// backward, on contiguous row-major operands (one sample per row), with a
// one-element loss and seed. The negatives neg (n×d) are optional: the
// zero Operand means none, and then ge is the zero Operand too. A backend
// without it still runs the losses: package nn/loss then composes them
// from autograd operations (MatMul, Concat, an additive mask, Exp, Sum,
// Log), in float32. The CPU backend computes them with the loops of
// package kernels/loss (the logits by kernels/gemm, a float64 log-sum-exp
// per row, the gradients as kernels/gemm products of the kept logit
// derivatives).
type ContrastiveBackend interface {
	// InfoNCE sets the one element of loss to the mean over the b
	// queries q (b×d) of -s⁺ + log(ε·exp(s⁺) + Σ exp(s⁻)) with logits
	// q·kᵀ/τ and q·negᵀ/τ, query i's positive being key i of k (b×d), and
	// keeps for InfoNCEBack the derivatives of the loss with respect to
	// the logits in gs (b×b) and ge (b×n).
	InfoNCE(loss, gs, ge, q, k, neg Operand, a ContrastArgs)
	// InfoNCEBack sets dq and dk, each unless it is the zero Operand, to
	// the gradients of InfoNCE times the one element of seed, from the
	// inputs and what InfoNCE kept.
	InfoNCEBack(dq, dk, gs, ge, q, k, neg, seed Operand, tau float64)
	// NTXent sets the one element of loss to NT-Xent of the two views held
	// in z (2b×d: the first view's rows, then the second's), anchor r's
	// positive being row r ± b and its batch negatives the 2b-2 other rows,
	// and keeps the derivatives with respect to the logits z·zᵀ/τ and
	// z·negᵀ/τ in gs (2b×2b) and ge (2b×n).
	NTXent(loss, gs, ge, z, neg Operand, a ContrastArgs)
	// NTXentBack sets dz (2b×d) to the gradient of NTXent times the one
	// element of seed, from z, neg and what NTXent kept.
	NTXentBack(dz, gs, ge, z, neg, seed Operand, tau float64)
}

var _ ContrastiveBackend = cpu{}

// rowsOf returns the number of rows of an optional matrix operand.
func rowsOf(o Operand) int {
	if IsZeroOperand(o) {
		return 0
	}
	return o.Shape[0]
}

func (cpu) InfoNCE(loss, gs, ge, q, k, neg Operand, a ContrastArgs) {
	b, d := q.Shape[0], q.Shape[1]
	l := kloss.InfoNCE(flat("InfoNCE", gs), flatOpt("InfoNCE", ge), flat("InfoNCE", q), flat("InfoNCE", k),
		flatOpt("InfoNCE", neg), b, rowsOf(neg), d, a)
	loss.Buf.Host[loss.Offset] = float32(l)
}

func (cpu) InfoNCEBack(dq, dk, gs, ge, q, k, neg, seed Operand, tau float64) {
	b, d := q.Shape[0], q.Shape[1]
	alpha := seed.Buf.Host[seed.Offset] / float32(tau)
	kloss.InfoNCEGrad(flatOpt("InfoNCEBack", dq), flatOpt("InfoNCEBack", dk), flat("InfoNCEBack", gs),
		flatOpt("InfoNCEBack", ge), flat("InfoNCEBack", q), flat("InfoNCEBack", k), flatOpt("InfoNCEBack", neg),
		b, rowsOf(neg), d, alpha)
}

func (cpu) NTXent(loss, gs, ge, z, neg Operand, a ContrastArgs) {
	b, d := z.Shape[0]/2, z.Shape[1]
	l := kloss.NTXent(flat("NTXent", gs), flatOpt("NTXent", ge), flat("NTXent", z), flatOpt("NTXent", neg),
		b, rowsOf(neg), d, a)
	loss.Buf.Host[loss.Offset] = float32(l)
}

func (cpu) NTXentBack(dz, gs, ge, z, neg, seed Operand, tau float64) {
	b, d := z.Shape[0]/2, z.Shape[1]
	alpha := seed.Buf.Host[seed.Offset] / float32(tau)
	kloss.NTXentGrad(flat("NTXentBack", dz), flat("NTXentBack", gs), flatOpt("NTXentBack", ge),
		flat("NTXentBack", z), flatOpt("NTXentBack", neg), b, rowsOf(neg), d, alpha)
}
