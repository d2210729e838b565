package tensor

import kloss "github.com/duel-ssl/duel/kernels/loss"

// LossBackend is an optional capability of a Backend: the fused
// self-supervised losses of package nn/loss, forward and backward, on
// contiguous b×d operands (one sample per row) and a one-element loss. A
// backend without it still runs the losses: package nn/loss then composes
// them from autograd operations, in float32. The CPU backend computes them
// with the loops of package kernels/loss (float64 sums, the loss rounded
// once; Barlow Twins' cross-correlation a kernels/gemm product).
type LossBackend interface {
	// BYOL sets the one element of loss to (1/b) Σᵢ (2 - 2·cos(pᵢ, zᵢ)),
	// each norm bounded below by eps.
	BYOL(loss, p, z Operand, eps float64)
	// BYOLBack sets dp and dz, each unless it is the zero Operand, to the
	// gradients of BYOL(p, z) times the one element of seed.
	BYOLBack(dp, dz, p, z, seed Operand, eps float64)
	// BarlowTwins sets the one element of loss to Barlow Twins' loss of
	// the views z1 and z2 (each column batch-normalised with variance
	// epsilon eps, C = ẑ1ᵀ ẑ2 / b, L = Σᵢ (Cᵢᵢ - 1)² + λ Σᵢ≠ⱼ Cᵢⱼ²) and
	// keeps for BarlowTwinsBack the normalised views in h1 and h2 (b×d)
	// and ∂L/∂C in g (d×d).
	BarlowTwins(loss, g, h1, h2, z1, z2 Operand, lambda, eps float64)
	// BarlowTwinsBack sets dz1 and dz2, each unless it is the zero
	// Operand, to the gradients of BarlowTwins times the one element of
	// seed, from the views and what BarlowTwins kept.
	BarlowTwinsBack(dz1, dz2, z1, z2, h1, h2, g, seed Operand, eps float64)
}

var _ LossBackend = cpu{}

func (cpu) BYOL(loss, p, z Operand, eps float64) {
	b, d := p.Shape[0], p.Shape[1]
	l, _, _, _ := kloss.BYOL(flat("BYOL", p), flat("BYOL", z), b, d, eps)
	loss.Buf.Host[loss.Offset] = float32(l)
}

func (cpu) BYOLBack(dp, dz, p, z, seed Operand, eps float64) {
	b, d := p.Shape[0], p.Shape[1]
	pd, zd := flat("BYOLBack", p), flat("BYOLBack", z)
	_, np, nz, cos := kloss.BYOL(pd, zd, b, d, eps)
	scale := -2 * float64(seed.Buf.Host[seed.Offset]) / float64(b)
	if !IsZeroOperand(dp) {
		kloss.BYOLGrad(flat("BYOLBack", dp), pd, zd, b, d, np, nz, cos, scale)
	}
	if !IsZeroOperand(dz) {
		kloss.BYOLGrad(flat("BYOLBack", dz), zd, pd, b, d, nz, np, cos, scale)
	}
}

func (cpu) BarlowTwins(loss, g, h1, h2, z1, z2 Operand, lambda, eps float64) {
	b, d := z1.Shape[0], z1.Shape[1]
	hd1, hd2 := flat("BarlowTwins", h1), flat("BarlowTwins", h2)
	kloss.BarlowNorm(hd1, flat("BarlowTwins", z1), b, d, eps)
	kloss.BarlowNorm(hd2, flat("BarlowTwins", z2), b, d, eps)
	l := kloss.Barlow(flat("BarlowTwins", g), hd1, hd2, b, d, lambda)
	loss.Buf.Host[loss.Offset] = float32(l)
}

func (cpu) BarlowTwinsBack(dz1, dz2, z1, z2, h1, h2, g, seed Operand, eps float64) {
	b, d := z1.Shape[0], z1.Shape[1]
	s := seed.Buf.Host[seed.Offset]
	gd, hd1, hd2 := flat("BarlowTwinsBack", g), flat("BarlowTwinsBack", h1), flat("BarlowTwinsBack", h2)
	if !IsZeroOperand(dz1) {
		std := kloss.BarlowNorm(nil, flat("BarlowTwinsBack", z1), b, d, eps)
		kloss.BarlowGrad(flat("BarlowTwinsBack", dz1), gd, hd1, hd2, std, b, d, s, true)
	}
	if !IsZeroOperand(dz2) {
		std := kloss.BarlowNorm(nil, flat("BarlowTwinsBack", z2), b, d, eps)
		kloss.BarlowGrad(flat("BarlowTwinsBack", dz2), gd, hd2, hd1, std, b, d, s, false)
	}
}
