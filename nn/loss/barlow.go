package loss

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// BarlowBNEps is the variance epsilon of Barlow Twins' batch normalisation
// (nn.BatchNorm1d's default in the reference implementation).
const BarlowBNEps = 1e-5

// DefaultBarlowLambda is the off-diagonal weight λ used by the paper and
// suggested by Barlow Twins (5e-3).
const DefaultBarlowLambda = 5e-3

// BarlowTwins is the redundancy-reduction loss of Barlow Twins for two views
// z1, z2 (B, D), as in facebookresearch/barlowtwins: each view is
// batch-normalised without affine parameters (batch mean, biased variance,
// ε = 1e-5), ẑ = (z - μ)/sqrt(σ² + ε), the cross-correlation is
// C = ẑ1ᵀ ẑ2 / B (D × D), and
//
//	L = Σᵢ (Cᵢᵢ - 1)² + λ Σᵢ≠ⱼ Cᵢⱼ²
//
// Backward: G = ∂L/∂C (2(Cᵢᵢ-1) on the diagonal, 2λCᵢⱼ off it),
// ∂L/∂ẑ1 = ẑ2 Gᵀ/B, ∂L/∂ẑ2 = ẑ1 G/B, then through the normalisation
// ∂L/∂z = (g - mean(g) - ẑ·mean(g ẑ)) / sqrt(σ² + ε) per feature.
func BarlowTwins(tp *autograd.Tape, z1, z2 *autograd.Var, lambda float64) *autograd.Var {
	d1, b, d := matrix("BarlowTwins", "z1", z1)
	d2, b2, dd := matrix("BarlowTwins", "z2", z2)
	if b2 != b || dd != d {
		panic(fmt.Sprintf("loss.BarlowTwins: z1 has shape %v but z2 has shape %v", z1.Shape(), z2.Shape()))
	}
	if b == 0 || d == 0 {
		panic(fmt.Sprintf("loss.BarlowTwins: empty input of shape %v", z1.Shape()))
	}
	if !(lambda >= 0) || math.IsInf(lambda, 0) {
		panic(fmt.Sprintf("loss.BarlowTwins: lambda %v, expected a finite value >= 0", lambda))
	}
	h1, s1 := batchNorm(d1, b, d)
	h2, s2 := batchNorm(d2, b, d)
	c := make([]float32, d*d)
	gemmAcc(true, false, d, d, b, 1/float32(b), h1, h2, c)
	var total float64
	for i := range d {
		for j := range d {
			v := float64(c[i*d+j])
			if i == j {
				total += (v - 1) * (v - 1)
				c[i*d+j] = float32(2 * (v - 1)) // becomes G in place
			} else {
				total += lambda * v * v
				c[i*d+j] = float32(2 * lambda * v)
			}
		}
	}
	return tp.Record(scalar(total), func(out *autograd.Var) {
		alpha := seed(out) / float32(b)
		if z1.RequiresGrad {
			g := make([]float32, b*d)
			gemmAcc(false, true, b, d, d, alpha, h2, c, g)
			autograd.AccumulateGradOwned(z1, batchNormBackward(g, h1, s1, b, d))
		}
		if z2.RequiresGrad {
			g := make([]float32, b*d)
			gemmAcc(false, false, b, d, d, alpha, h1, c, g)
			autograd.AccumulateGradOwned(z2, batchNormBackward(g, h2, s2, b, d))
		}
	}, z1, z2)
}

// batchNorm normalises each column of x (b, d) with the batch mean and
// biased variance, returning ẑ and sqrt(σ² + ε) per column.
func batchNorm(x []float32, b, d int) ([]float32, []float64) {
	mean, sq := make([]float64, d), make([]float64, d)
	for r := range b {
		for j, v := range x[r*d : (r+1)*d] {
			mean[j] += float64(v)
		}
	}
	for j := range mean {
		mean[j] /= float64(b)
	}
	for r := range b {
		for j, v := range x[r*d : (r+1)*d] {
			dv := float64(v) - mean[j]
			sq[j] += dv * dv
		}
	}
	std := make([]float64, d)
	for j := range std {
		std[j] = math.Sqrt(sq[j]/float64(b) + BarlowBNEps)
	}
	h := make([]float32, b*d)
	for r := range b {
		for j, v := range x[r*d : (r+1)*d] {
			h[r*d+j] = float32((float64(v) - mean[j]) / std[j])
		}
	}
	return h, std
}

// batchNormBackward returns ∂L/∂x from g = ∂L/∂ẑ for ẑ = batchNorm(x).
func batchNormBackward(g, h []float32, std []float64, b, d int) *tensor.Tensor {
	mg, mgh := make([]float64, d), make([]float64, d)
	for r := range b {
		for j := range d {
			i := r*d + j
			mg[j] += float64(g[i])
			mgh[j] += float64(g[i]) * float64(h[i])
		}
	}
	out := tensor.New(b, d)
	od := out.Data()
	for r := range b {
		for j := range d {
			i := r*d + j
			od[i] = float32((float64(g[i]) - mg[j]/float64(b) - float64(h[i])*mgh[j]/float64(b)) / std[j])
		}
	}
	return out
}
