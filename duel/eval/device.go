package eval

import (
	"fmt"

	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/tensor"
)

// similarities returns a function that writes into sims (m rows of tr.N,
// row-major) the dot products of the m rows of q (m x tr.D) with every row
// of tr, computed on dev: one SGEMM of kernels/gemm on the CPU, the
// backend's Gemm (tensor.MatMul) elsewhere.
func similarities(tr *Features, dev tensor.Device) (func(sims, q []float32, m int) error, error) {
	if dev == "" || dev == tensor.CPU {
		return func(sims, q []float32, m int) error {
			gemm.Sgemm(false, true, m, tr.N, tr.D, 1, q, tr.D, tr.X, tr.D, 0, sims, tr.N)
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
