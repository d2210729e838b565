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
func InfoNCE(tp *autograd.Tape, q, k, negatives *autograd.Var, opt ContrastiveOptions) *autograd.Var {
	const op = "InfoNCE"
	opt.check(op)
	qd, b, d := matrix(op, "q", q)
	kd, bk, dk := matrix(op, "k", k)
	if bk != b || dk != d {
		panic(fmt.Sprintf("loss.InfoNCE: q has shape %v but k has shape %v", q.Shape(), k.Shape()))
	}
	nd, n := negativesOf(op, negatives, d)
	pos := make([]int, b)
	for i := range pos {
		pos[i] = i
	}
	c := newContrast(op, qd, kd, nd, b, b, n, d, pos, nil, opt)
	return tp.Record(scalar(c.loss), func(out *autograd.Var) {
		alpha := seed(out) / float32(opt.Tau)
		if q.RequiresGrad {
			dq := tensor.New(b, d)
			gemmAcc(false, false, b, d, b, alpha, c.gS, kd, dq.Data())
			gemmAcc(false, false, b, d, n, alpha, c.gE, nd, dq.Data())
			autograd.AccumulateGradOwned(q, dq)
		}
		if k.RequiresGrad {
			dk := tensor.New(b, d)
			gemmAcc(true, false, b, d, b, alpha, c.gS, qd, dk.Data())
			autograd.AccumulateGradOwned(k, dk)
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
func NTXent(tp *autograd.Tape, z1, z2, negatives *autograd.Var, opt ContrastiveOptions) *autograd.Var {
	const op = "NTXent"
	opt.check(op)
	d1, b, d := matrix(op, "z1", z1)
	d2, b2, dd := matrix(op, "z2", z2)
	if b2 != b || dd != d {
		panic(fmt.Sprintf("loss.NTXent: z1 has shape %v but z2 has shape %v", z1.Shape(), z2.Shape()))
	}
	nd, n := negativesOf(op, negatives, d)
	m := 2 * b
	z := make([]float32, m*d)
	copy(z, d1)
	copy(z[b*d:], d2)
	pos := make([]int, m)
	self := make([]int, m)
	for a := range m {
		pos[a] = (a + b) % m
		self[a] = a
	}
	c := newContrast(op, z, z, nd, m, m, n, d, pos, self, opt)
	return tp.Record(scalar(c.loss), func(out *autograd.Var) {
		alpha := seed(out) / float32(opt.Tau)
		// z is both anchors and candidates: dZ = (G + Gᵀ) Z + G_E N.
		dz := make([]float32, m*d)
		gemmAcc(false, false, m, d, m, alpha, c.gS, z, dz)
		gemmAcc(true, false, m, d, m, alpha, c.gS, z, dz)
		gemmAcc(false, false, m, d, n, alpha, c.gE, nd, dz)
		autograd.AccumulateGradOwned(z1, tensor.FromSlice(dz[:b*d], b, d))
		autograd.AccumulateGradOwned(z2, tensor.FromSlice(dz[b*d:], b, d))
	}, z1, z2)
}

// negativesOf returns the data and row count of an optional negatives matrix.
func negativesOf(op string, negatives *autograd.Var, d int) ([]float32, int) {
	if negatives == nil {
		return nil, 0
	}
	nd, n, dn := matrix(op, "negatives", negatives)
	if dn != d && n > 0 {
		panic(fmt.Sprintf("loss.%s: negatives have shape %v, expected (N, %d)", op, negatives.Shape(), d))
	}
	return nd, n
}

// contrast holds the forward results shared by InfoNCE and NTXent: the
// loss and the derivatives of the mean loss with respect to the similarity
// logits, gS (rows × cands) for anchors·candidatesᵀ and gE (rows × N) for
// anchors·negativesᵀ (derivatives with respect to the logits, so the
// gradients are 1/τ times these matrices multiplied by the embeddings).
type contrast struct {
	loss   float64
	gS, gE []float32
}

// newContrast computes, for anchors a (rows, D) and candidates c (cands,
// D), the mean over anchors of -s⁺ + log(ε·exp(s⁺) + Σ exp(s⁻)), where the
// positive of anchor r is candidate pos[r]; its batch negatives (with
// opt.BatchNegatives) are all other candidates except self[r] (when self
// is non-nil); and every row of neg (N, D) is a negative.
func newContrast(op string, a, c, neg []float32, rows, cands, n, d int, pos, self []int, opt ContrastiveOptions) *contrast {
	if rows == 0 {
		panic(fmt.Sprintf("loss.%s: empty batch", op))
	}
	negCount := n
	if opt.BatchNegatives {
		negCount += cands - 1
		if self != nil {
			negCount--
		}
	}
	if opt.Eps == 0 && negCount <= 0 {
		panic(fmt.Sprintf("loss.%s: eps = 0 needs at least one negative (batch negatives off, %d memory negatives)", op, n))
	}
	invTau := float32(1 / opt.Tau)
	s := mulABt(a, c, rows, cands, d, invTau) // becomes gS in place
	e := mulABt(a, neg, rows, n, d, invTau)   // becomes gE in place
	logEps := math.Log(opt.Eps)               // -Inf when eps = 0
	inv := 1 / float64(rows)
	var total float64
	for r := range rows {
		srow, erow := s[r*cands:(r+1)*cands], e[r*n:(r+1)*n]
		p, me := pos[r], -1
		if self != nil {
			me = self[r]
		}
		lp := float64(srow[p])
		isNeg := func(j int) bool { return opt.BatchNegatives && j != p && j != me }
		// Stable log-sum-exp over ε·exp(s⁺) and the negatives.
		mx := lp + logEps
		for j, v := range srow {
			if isNeg(j) && float64(v) > mx {
				mx = float64(v)
			}
		}
		for _, v := range erow {
			if float64(v) > mx {
				mx = float64(v)
			}
		}
		// Z = ε·exp(s⁺) + Σ exp(s⁻), relative to mx; the exponentials are
		// kept in place and scaled into the derivatives
		// ∂Lᵣ/∂s⁻ = exp(s⁻)/Z and ∂Lᵣ/∂s⁺ = ε·exp(s⁺)/Z - 1 (others 0).
		var ep float64
		if opt.Eps > 0 {
			ep = math.Exp(lp + logEps - mx)
		}
		z := ep
		for j, v := range srow {
			ev := 0.0
			if isNeg(j) {
				ev = math.Exp(float64(v) - mx)
				z += ev
			}
			srow[j] = float32(ev)
		}
		for j, v := range erow {
			ev := math.Exp(float64(v) - mx)
			z += ev
			erow[j] = float32(ev)
		}
		total += mx + math.Log(z) - lp
		scale := float32(inv / z)
		for j := range srow {
			srow[j] *= scale
		}
		for j := range erow {
			erow[j] *= scale
		}
		srow[p] = float32((ep/z - 1) * inv)
	}
	return &contrast{loss: total * inv, gS: s, gE: e}
}
