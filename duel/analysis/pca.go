package analysis

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// PCA projects the n rows of x (n x d, row-major) on their first k principal
// components (k <= d) after centring, returning n x k values in float64. The
// components come from the eigen-decomposition of the covariance (gonum's
// EigenSym), in decreasing order of variance, each with the sign that makes
// its largest-magnitude coefficient positive, so the result is deterministic.
func PCA(x []float32, n, d, k int) ([]float64, error) {
	if n < 0 || d <= 0 || len(x) != n*d {
		return nil, fmt.Errorf("PCA: %d values for %d rows of dimension %d", len(x), n, d)
	}
	if k < 1 || k > d {
		return nil, fmt.Errorf("PCA: %d components of dimension %d, expected 1..%d", k, d, d)
	}
	if n == 0 {
		return nil, nil
	}
	mean := make([]float64, d)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			mean[j] += float64(x[i*d+j])
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	c := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			c.Set(i, j, float64(x[i*d+j])-mean[j])
		}
	}
	var cov mat.SymDense
	cov.SymOuterK(1, c.T())
	var eig mat.EigenSym
	if !eig.Factorize(&cov, true) {
		return nil, fmt.Errorf("PCA: eigen-decomposition of the %dx%d covariance did not converge", d, d)
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	// EigenSym returns eigenvalues in ascending order: take the last k.
	comp := mat.NewDense(d, k, nil)
	for a := 0; a < k; a++ {
		col := d - 1 - a
		best, sign := 0.0, 1.0
		for j := 0; j < d; j++ {
			if v := vecs.At(j, col); math.Abs(v) > best {
				best = math.Abs(v)
				sign = math.Copysign(1, v)
			}
		}
		for j := 0; j < d; j++ {
			comp.Set(j, a, sign*vecs.At(j, col))
		}
	}
	var out mat.Dense
	out.Mul(c, comp)
	return out.RawMatrix().Data, nil
}
