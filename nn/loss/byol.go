package loss

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// normEps bounds norms below, as torch.nn.functional.normalize does.
const normEps = 1e-12

// BYOL is BYOL's normalised mean squared error between predictions p and
// targets z (B, D), averaged over the batch:
//
//	L = (1/B) Σᵢ ‖pᵢ/‖pᵢ‖ - zᵢ/‖zᵢ‖‖² = (1/B) Σᵢ (2 - 2·cos(pᵢ, zᵢ))
//	∂L/∂pᵢ = -(2/B) (vᵢ - cᵢuᵢ) / ‖pᵢ‖,  u = p/‖p‖, v = z/‖z‖, c = u·v
//
// (symmetrically for z). Norms are bounded below by 1e-12. The target
// branch is normally detached by the caller (BYOL's stop-gradient); the
// symmetric loss L(p₁, z₂) + L(p₂, z₁) is the caller's sum.
//
// It computes on the inputs' device: with its backend's
// tensor.LossBackend (the CPU's: kernels/loss, float64 sums) when it has
// one, else composed of autograd operations (L2Normalize, Mul, Sum,
// MeanAll) in float32.
func BYOL(tp *autograd.Tape, p, z *autograd.Var) *autograd.Var {
	b, d := dims2("BYOL", "p", p)
	bz, dz := dims2("BYOL", "z", z)
	if bz != b || dz != d {
		panic(fmt.Sprintf("loss.BYOL: p has shape %v but z has shape %v", p.Shape(), z.Shape()))
	}
	if b == 0 {
		panic("loss.BYOL: empty batch")
	}
	pv, zv := p.Value.Contiguous(), z.Value.Contiguous()
	lb, ok := pv.Backend().(tensor.LossBackend)
	if !ok {
		u, v := autograd.L2Normalize(tp, p, 1), autograd.L2Normalize(tp, z, 1)
		cos := autograd.Sum(tp, autograd.Mul(tp, u, v), 1, false)
		return autograd.MeanAll(tp, autograd.AddScalar(tp, autograd.MulScalar(tp, cos, -2), 2))
	}
	dev := pv.Device()
	loss := tensor.ZerosOn(dev)
	lb.BYOL(loss.Operand(), pv.Operand(), zv.Operand(), normEps)
	return tp.Record(loss, func(out *autograd.Var) {
		var gp, gz *tensor.Tensor
		var op, oz tensor.Operand
		if p.RequiresGrad {
			gp = tensor.ZerosOn(dev, b, d)
			op = gp.Operand()
		}
		if z.RequiresGrad {
			gz = tensor.ZerosOn(dev, b, d)
			oz = gz.Operand()
		}
		lb.BYOLBack(op, oz, pv.Operand(), zv.Operand(), out.Grad.Contiguous().Operand(), normEps)
		if gp != nil {
			autograd.AccumulateGradOwned(p, gp)
		}
		if gz != nil {
			autograd.AccumulateGradOwned(z, gz)
		}
	}, p, z)
}
