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
//
// It computes on the inputs' device: with its backend's
// tensor.LossBackend (the CPU's: kernels/loss, float64 statistics and a
// kernels/gemm cross-correlation) when it has one, else composed of
// autograd operations (Mean, Square, Sqrt, Div, MatMul, SumAll) in float32.
func BarlowTwins(tp *autograd.Tape, z1, z2 *autograd.Var, lambda float64) *autograd.Var {
	b, d := dims2("BarlowTwins", "z1", z1)
	b2, dd := dims2("BarlowTwins", "z2", z2)
	if b2 != b || dd != d {
		panic(fmt.Sprintf("loss.BarlowTwins: z1 has shape %v but z2 has shape %v", z1.Shape(), z2.Shape()))
	}
	if b == 0 || d == 0 {
		panic(fmt.Sprintf("loss.BarlowTwins: empty input of shape %v", z1.Shape()))
	}
	if !(lambda >= 0) || math.IsInf(lambda, 0) {
		panic(fmt.Sprintf("loss.BarlowTwins: lambda %v, expected a finite value >= 0", lambda))
	}
	v1, v2 := z1.Value.Contiguous(), z2.Value.Contiguous()
	lb, ok := v1.Backend().(tensor.LossBackend)
	if !ok {
		return barlowComposed(tp, z1, z2, b, d, lambda)
	}
	dev := v1.Device()
	loss := tensor.ZerosOn(dev)
	g, h1, h2 := tensor.ZerosOn(dev, d, d), tensor.ZerosOn(dev, b, d), tensor.ZerosOn(dev, b, d)
	lb.BarlowTwins(loss.Operand(), g.Operand(), h1.Operand(), h2.Operand(), v1.Operand(), v2.Operand(), lambda, BarlowBNEps)
	return tp.Record(loss, func(out *autograd.Var) {
		var g1, g2 *tensor.Tensor
		var o1, o2 tensor.Operand
		if z1.RequiresGrad {
			g1 = tensor.ZerosOn(dev, b, d)
			o1 = g1.Operand()
		}
		if z2.RequiresGrad {
			g2 = tensor.ZerosOn(dev, b, d)
			o2 = g2.Operand()
		}
		lb.BarlowTwinsBack(o1, o2, v1.Operand(), v2.Operand(), h1.Operand(), h2.Operand(), g.Operand(),
			out.Grad.Contiguous().Operand(), BarlowBNEps)
		if g1 != nil {
			autograd.AccumulateGradOwned(z1, g1)
		}
		if g2 != nil {
			autograd.AccumulateGradOwned(z2, g2)
		}
	}, z1, z2)
}

// barlowComposed is BarlowTwins composed of autograd operations on the
// inputs' device, for a backend without tensor.LossBackend.
func barlowComposed(tp *autograd.Tape, z1, z2 *autograd.Var, b, d int, lambda float64) *autograd.Var {
	norm := func(z *autograd.Var) *autograd.Var {
		c := autograd.Sub(tp, z, autograd.Mean(tp, z, 0, true))
		v := autograd.Mean(tp, autograd.Square(tp, c), 0, true)
		return autograd.Div(tp, c, autograd.Sqrt(tp, autograd.AddScalar(tp, v, BarlowBNEps)))
	}
	c := autograd.MulScalar(tp, autograd.MatMul(tp, autograd.Transpose(tp, norm(z1), 0, 1), norm(z2)), 1/float32(b))
	dev := z1.Value.Device()
	on := func(t *tensor.Tensor) *autograd.Var {
		v, err := t.To(dev)
		if err != nil {
			panic(fmt.Sprintf("loss.BarlowTwins: %v", err))
		}
		return autograd.Const(v)
	}
	eye := tensor.Eye(d)
	offMask := tensor.Full(1, d, d)
	for i := range d {
		offMask.Set(0, i, i)
	}
	diag := autograd.Sub(tp, autograd.Mul(tp, c, on(eye)), on(eye))
	off := autograd.Mul(tp, c, on(offMask))
	return autograd.Add(tp, autograd.SumAll(tp, autograd.Square(tp, diag)),
		autograd.MulScalar(tp, autograd.SumAll(tp, autograd.Square(tp, off)), float32(lambda)))
}
