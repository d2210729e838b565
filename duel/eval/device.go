package eval

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// similarities returns a function that writes into sims (m rows of tr.N,
// row-major) the dot products of the m rows of q (m x tr.D) with every row
// of tr, computed on dev by its backend's Gemm: on the CPU one call of
// Backend.Gemm straight on the host slices (q times tr.X transposed, no
// copies), elsewhere through tensor.MatMul on the device.
func similarities(tr *Features, dev tensor.Device) (func(sims, q []float32, m int) error, error) {
	if dev == "" || dev == tensor.CPU {
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
	bank, err := tensor.FromSlice(tr.X, tr.N, tr.D).To(dev)
	if err != nil {
		return nil, fmt.Errorf("kNN: copying %d training rows to %s: %w", tr.N, dev, err)
	}
	bankT := bank.T()
	return func(sims, q []float32, m int) error {
		qd, err := tensor.FromSlice(q[:m*tr.D], m, tr.D).To(dev)
		if err != nil {
			return fmt.Errorf("kNN: copying %d test rows to %s: %w", m, dev, err)
		}
		s, err := tensor.MatMul(qd, bankT).To(tensor.CPU)
		if err != nil {
			return fmt.Errorf("kNN: copying similarities from %s: %w", dev, err)
		}
		copy(sims[:m*tr.N], s.Contiguous().Data())
		return nil
	}, nil
}
