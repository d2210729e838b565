package tensor

import kloss "github.com/duel-ssl/duel/kernels/loss"

// LossBackend is an optional capability of a Backend: the fused
// self-supervised losses of package nn/loss, forward and backward, on
// contiguous b×d operands (one sample per row) and a one-element loss. A
// backend without it still runs the losses: package nn/loss then composes
// them from autograd operations, in float32. The CPU backend computes them
// with the loops of package kernels/loss (float64 sums, the loss rounded
// once).
type LossBackend interface {
	// BYOL sets the one element of loss to (1/b) Σᵢ (2 - 2·cos(pᵢ, zᵢ)),
	// each norm bounded below by eps.
	BYOL(loss, p, z Operand, eps float64)
	// BYOLBack sets dp and dz, each unless it is the zero Operand, to the
	// gradients of BYOL(p, z) times the one element of seed.
	BYOLBack(dp, dz, p, z, seed Operand, eps float64)
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
