package loss

import (
	"math"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// ContrastArgs configures InfoNCE and NTXent: the temperature Tau > 0, the
// weight Eps ∈ [0, 1] of the positive in the denominator (the paper's
// Eq. 17), and BatchNegatives, which makes the other samples of the batch
// negatives too (the other keys for InfoNCE, the 2b-2 other views for
// NT-Xent). The callers check the ranges.
type ContrastArgs struct {
	Tau, Eps       float64
	BatchNegatives bool
}

// InfoNCE returns the mean over the b queries q (b×d) of
// -s⁺ + log(ε·exp(s⁺) + Σ exp(s⁻)), where s = q·kᵀ/τ, the positive of
// query i is key i, its batch negatives (with a.BatchNegatives) the other
// keys, and every row of neg (n×d) is a negative. It writes into gs (b×b)
// and ge (b×n) the derivatives of that mean with respect to the logits
// q·kᵀ/τ and q·negᵀ/τ, which InfoNCEGrad turns into gradients.
func InfoNCE(gs, ge, q, k, neg []float32, b, n, d int, a ContrastArgs) float64 {
	pos := make([]int, b)
	for i := range pos {
		pos[i] = i
	}
	return contrast(gs, ge, q, k, neg, b, b, n, d, pos, nil, a)
}

// InfoNCEGrad writes into dq and dk (b×d, each unless nil) the gradients
// of InfoNCE from the derivatives gs and ge it kept, times alpha (the
// incoming gradient over τ, rounded to float32): dq = α(gs·k + ge·neg),
// dk = α gsᵀ·q.
func InfoNCEGrad(dq, dk, gs, ge, q, k, neg []float32, b, n, d int, alpha float32) {
	if dq != nil {
		clear(dq)
		gemmAcc(false, false, b, d, b, alpha, gs, k, dq)
		gemmAcc(false, false, b, d, n, alpha, ge, neg, dq)
	}
	if dk != nil {
		clear(dk)
		gemmAcc(true, false, b, d, b, alpha, gs, q, dk)
	}
}

// NTXent returns SimCLR's NT-Xent of the two views held in z (2b×d: the
// first view's b rows, then the second's): the mean over the 2b anchors r
// of -s⁺ + log(ε·exp(s⁺) + Σ exp(s⁻)) with s = z·zᵀ/τ, the positive of r
// the other view of its sample (r ± b), its batch negatives (with
// a.BatchNegatives) the 2b-2 other rows, and every row of neg (n×d) a
// negative. It writes the derivatives with respect to the logits into gs
// (2b×2b) and ge (2b×n), which NTXentGrad turns into gradients.
func NTXent(gs, ge, z, neg []float32, b, n, d int, a ContrastArgs) float64 {
	m := 2 * b
	pos, self := make([]int, m), make([]int, m)
	for r := range m {
		pos[r] = (r + b) % m
		self[r] = r
	}
	return contrast(gs, ge, z, z, neg, m, m, n, d, pos, self, a)
}

// NTXentGrad writes into dz (2b×d) the gradient of NTXent from the
// derivatives gs and ge it kept, times alpha: z is both anchors and
// candidates, so dz = α(gs·z + gsᵀ·z + ge·neg), summed in that order.
func NTXentGrad(dz, gs, ge, z, neg []float32, b, n, d int, alpha float32) {
	m := 2 * b
	clear(dz)
	gemmAcc(false, false, m, d, m, alpha, gs, z, dz)
	gemmAcc(true, false, m, d, m, alpha, gs, z, dz)
	gemmAcc(false, false, m, d, n, alpha, ge, neg, dz)
}

// contrast computes, for anchors x (rows×d) and candidates c (cands×d),
// the mean over anchors of -s⁺ + log(ε·exp(s⁺) + Σ exp(s⁻)), where the
// positive of anchor r is candidate pos[r]; its batch negatives (with
// a.BatchNegatives) are all other candidates except self[r] (when self is
// non-nil); and every row of neg (n×d) is a negative. The logits
// x·cᵀ/τ and x·negᵀ/τ are computed into gs and ge and replaced in place by
// the derivatives of the mean loss with respect to them. The log-sum-exp
// is stable (relative to the row's largest logit) and accumulated in
// float64.
func contrast(gs, ge, x, c, neg []float32, rows, cands, n, d int, pos, self []int, a ContrastArgs) float64 {
	invTau := float32(1 / a.Tau)
	mulABt(gs, x, c, rows, cands, d, invTau)
	mulABt(ge, x, neg, rows, n, d, invTau)
	logEps := math.Log(a.Eps) // -Inf when eps = 0
	inv := 1 / float64(rows)
	var total float64
	for r := range rows {
		srow, erow := gs[r*cands:(r+1)*cands], ge[r*n:(r+1)*n]
		p, me := pos[r], -1
		if self != nil {
			me = self[r]
		}
		lp := float64(srow[p])
		isNeg := func(j int) bool { return a.BatchNegatives && j != p && j != me }
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
		if a.Eps > 0 {
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
	return total * inv
}

// mulABt sets c (m×n) = alpha·a·bᵀ for row-major a (m×k) and b (n×k).
func mulABt(c, a, b []float32, m, n, k int, alpha float32) {
	if m > 0 && n > 0 {
		gemm.Sgemm(false, true, m, n, k, alpha, a, k, b, k, 0, c, n)
	}
}
