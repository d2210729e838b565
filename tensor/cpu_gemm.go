package tensor

import "github.com/duel-ssl/duel/kernels/gemm"

// Gemm runs every matrix of the batch through gemm.Sgemm.
func (cpu) Gemm(g GemmArgs) {
	if g.M == 0 || g.N == 0 {
		return
	}
	a, b, c := g.A.Host, g.B.Host, g.C.Host
	for i := 0; i < g.Batch; i++ {
		gemm.Sgemm(g.TransA, g.TransB, g.M, g.N, g.K, g.Alpha,
			a[g.OffA+i*g.StrideA:], g.LDA,
			b[g.OffB+i*g.StrideB:], g.LDB,
			g.Beta, c[g.OffC+i*g.StrideC:], g.LDC)
	}
}
