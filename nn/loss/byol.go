package loss

import (
	"fmt"
	"math"

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
func BYOL(tp *autograd.Tape, p, z *autograd.Var) *autograd.Var {
	pd, b, d := matrix("BYOL", "p", p)
	zd, bz, dz := matrix("BYOL", "z", z)
	if bz != b || dz != d {
		panic(fmt.Sprintf("loss.BYOL: p has shape %v but z has shape %v", p.Shape(), z.Shape()))
	}
	if b == 0 {
		panic("loss.BYOL: empty batch")
	}
	np, nz, cos := make([]float64, b), make([]float64, b), make([]float64, b)
	var total float64
	for i := range b {
		pr, zr := pd[i*d:(i+1)*d], zd[i*d:(i+1)*d]
		var pp, zz, pz float64
		for j := range pr {
			x, y := float64(pr[j]), float64(zr[j])
			pp += x * x
			zz += y * y
			pz += x * y
		}
		np[i], nz[i] = math.Max(math.Sqrt(pp), normEps), math.Max(math.Sqrt(zz), normEps)
		cos[i] = pz / (np[i] * nz[i])
		total += 2 - 2*cos[i]
	}
	return tp.Record(scalar(total/float64(b)), func(out *autograd.Var) {
		scale := -2 * float64(seed(out)) / float64(b)
		grad := func(x, y []float32, nx, ny []float64) *tensor.Tensor {
			g := tensor.New(b, d)
			gd := g.Data()
			for i := range b {
				xr, yr := x[i*d:(i+1)*d], y[i*d:(i+1)*d]
				// (v - c·u)/‖x‖ with u = x/‖x‖, v = y/‖y‖.
				a, c := scale/(nx[i]*ny[i]), scale*cos[i]/(nx[i]*nx[i])
				for j := range xr {
					gd[i*d+j] = float32(a*float64(yr[j]) - c*float64(xr[j]))
				}
			}
			return g
		}
		if p.RequiresGrad {
			autograd.AccumulateGradOwned(p, grad(pd, zd, np, nz))
		}
		if z.RequiresGrad {
			autograd.AccumulateGradOwned(z, grad(zd, pd, nz, np))
		}
	}, p, z)
}
