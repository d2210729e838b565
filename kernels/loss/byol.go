// Package loss holds the fused loops of package nn/loss's self-supervised
// losses on float32 rows, with float64 sums: BYOL's normalised mean squared
// error, Barlow Twins' redundancy reduction and the contrastive InfoNCE and
// NT-Xent, forward and backward.
//
// # Layout
//
// Every matrix is row-major and dense. The inputs are b×d (or n×d, 2b×d):
// one sample per row; the contrastive losses' logit derivatives are one
// row per anchor, one column per candidate (b×b, 2b×2b) or negative (×n).
package loss

import "math"

// BYOL returns (1/b) Σᵢ (2 - 2·cos(pᵢ, zᵢ)) over the rows of p and z, with
// each norm bounded below by eps, and the per-row norms of p and z and the
// cosines the gradient needs (BYOLGrad).
func BYOL(p, z []float32, b, d int, eps float64) (loss float64, np, nz, cos []float64) {
	np, nz, cos = make([]float64, b), make([]float64, b), make([]float64, b)
	var total float64
	for i := range b {
		pr, zr := p[i*d:(i+1)*d], z[i*d:(i+1)*d]
		var pp, zz, pz float64
		for j := range pr {
			x, y := float64(pr[j]), float64(zr[j])
			pp += x * x
			zz += y * y
			pz += x * y
		}
		np[i], nz[i] = math.Max(math.Sqrt(pp), eps), math.Max(math.Sqrt(zz), eps)
		cos[i] = pz / (np[i] * nz[i])
		total += 2 - 2*cos[i]
	}
	return total / float64(b), np, nz, cos
}

// BYOLGrad writes into g the gradient of BYOL with respect to x, scaled:
// gᵢ = scale·(vᵢ - cᵢuᵢ)/‖xᵢ‖ with u = x/‖x‖, v = y/‖y‖ and c = cos, nx
// and ny the norms of x and y as BYOL returns them (scale is -2/b times
// the incoming gradient). For p's gradient x = p, y = z; for z's the other
// way round.
func BYOLGrad(g, x, y []float32, b, d int, nx, ny, cos []float64, scale float64) {
	for i := range b {
		xr, yr := x[i*d:(i+1)*d], y[i*d:(i+1)*d]
		a, c := scale/(nx[i]*ny[i]), scale*cos[i]/(nx[i]*nx[i])
		for j := range xr {
			g[i*d+j] = float32(a*float64(yr[j]) - c*float64(xr[j]))
		}
	}
}
