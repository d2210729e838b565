package analysis

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// PCA projects the n rows of x (n x d, row-major) on their first k principal
// components (k <= d) after centring, returning n x k values in float64. The
// components are the covariance's eigenvectors of the k largest eigenvalues
// (topEigenvectors), in decreasing order of variance, each with the sign
// that makes its largest-magnitude coefficient positive, so the result is
// deterministic.
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
	full := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := cov.At(i, j)
			full[i*d+j], full[j*d+i] = v, v
		}
	}
	comp, err := topEigenvectors(full, d, k)
	if err != nil {
		return nil, fmt.Errorf("PCA: %w", err)
	}
	var out mat.Dense
	out.Mul(c, comp)
	return out.RawMatrix().Data, nil
}
