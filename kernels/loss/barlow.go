package loss

import (
	"math"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// BarlowNorm writes into h the columns of x (b×d) normalised with the
// batch mean and biased variance, ẑ = (x - μ)/sqrt(σ² + eps), and returns
// sqrt(σ² + eps) per column, all in float64 before the rounding of ẑ.
func BarlowNorm(h, x []float32, b, d int, eps float64) []float64 {
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
		std[j] = math.Sqrt(sq[j]/float64(b) + eps)
	}
	if h != nil {
		for r := range b {
			for j, v := range x[r*d : (r+1)*d] {
				h[r*d+j] = float32((float64(v) - mean[j]) / std[j])
			}
		}
	}
	return std
}

// Barlow writes into g (d×d) the gradient G = ∂L/∂C of Barlow Twins' loss
// at the cross-correlation C = h1ᵀ h2 / b of the normalised views h1, h2
// (b×d): 2(Cᵢᵢ - 1) on the diagonal, 2λCᵢⱼ off it, and returns
// L = Σᵢ (Cᵢᵢ - 1)² + λ Σᵢ≠ⱼ Cᵢⱼ² (float64 sums of the float32 C).
func Barlow(g, h1, h2 []float32, b, d int, lambda float64) float64 {
	clear(g)
	gemmAcc(true, false, d, d, b, 1/float32(b), h1, h2, g)
	var total float64
	for i := range d {
		for j := range d {
			v := float64(g[i*d+j])
			if i == j {
				total += (v - 1) * (v - 1)
				g[i*d+j] = float32(2 * (v - 1))
			} else {
				total += lambda * v * v
				g[i*d+j] = float32(2 * lambda * v)
			}
		}
	}
	return total
}

// BarlowGrad writes into dz (b×d) the gradient of Barlow Twins' loss with
// respect to one view, scaled by seed: with alpha = seed/b, ∂L/∂ẑ is
// alpha·other·Gᵀ for the first view (first) and alpha·other·G for the
// second, then through the normalisation of the view (h its ẑ, std its
// BarlowNorm) ∂L/∂z = (g - mean(g) - ẑ·mean(g ẑ)) / std per column.
func BarlowGrad(dz, g, h, other []float32, std []float64, b, d int, seed float32, first bool) {
	gh := make([]float32, b*d)
	gemmAcc(false, first, b, d, d, seed/float32(b), other, g, gh)
	mg, mgh := make([]float64, d), make([]float64, d)
	for r := range b {
		for j := range d {
			i := r*d + j
			mg[j] += float64(gh[i])
			mgh[j] += float64(gh[i]) * float64(h[i])
		}
	}
	for r := range b {
		for j := range d {
			i := r*d + j
			dz[i] = float32((float64(gh[i]) - mg[j]/float64(b) - float64(h[i])*mgh[j]/float64(b)) / std[j])
		}
	}
}

// gemmAcc computes c = alpha*op(a)*op(b) + c with op(a) (m,k), op(b) (k,n).
func gemmAcc(transA, transB bool, m, n, k int, alpha float32, a, b, c []float32) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	gemm.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, 1, c, n)
}
