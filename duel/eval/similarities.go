package eval

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// similarities returns a function that writes into sims (m rows of tr.N,
// row-major) the dot products of the m rows of q (m x tr.D) with every row
// of tr: one call of the CPU backend's Gemm straight on the host slices (q
// times tr.X transposed, no copies). On other devices neighbours keeps the
// similarities on the device instead.
func similarities(tr *Features) (func(sims, q []float32, m int) error, error) {
	be, err := tensor.Lookup(string(tensor.CPU))
	if err != nil {
		return nil, fmt.Errorf("kNN: %w", err)
	}
	return func(sims, q []float32, m int) error {
		be.Gemm(tensor.GemmArgs{
			TransB: true, M: m, N: tr.N, K: tr.D, Alpha: 1,
			A: tensor.Buffer{Host: q}, B: tensor.Buffer{Host: tr.X}, C: tensor.Buffer{Host: sims},
			LDA: tr.D, LDB: tr.D, LDC: tr.N, Batch: 1,
		})
		return nil
	}, nil
}
