package tensor

import (
	"runtime"

	"github.com/duel-ssl/duel/internal/par"
	"github.com/duel-ssl/duel/kernels/gemm"
)

// gemmParallelFlops: below this many flops per matrix Sgemm stays on one
// goroutine, so batches of such matrices are split across goroutines here
// instead.
const gemmParallelFlops = gemm.MinParallelFlops

// Gemm runs every matrix of the batch through gemm.Sgemm, splitting a
// batch of small matrices in two halves run concurrently.
func (c cpu) Gemm(g GemmArgs) {
	if g.M == 0 || g.N == 0 || g.Batch == 0 {
		return
	}
	flops := 2 * g.M * g.N * g.K
	if g.Batch >= 2 && g.StrideC != 0 && flops < gemmParallelFlops && flops*g.Batch >= gemmParallelFlops/4 && runtime.GOMAXPROCS(0) >= 2 {
		h := g.Batch / 2
		par.Run(2, func(i int) {
			if i == 0 {
				gemmRange(c.product(), &g, 0, h)
			} else {
				gemmRange(c.product(), &g, h, g.Batch)
			}
		})
		return
	}
	gemmRange(c.product(), &g, 0, g.Batch)
}

// gemmRange computes matrices [i0, i1) of the batch with mm.
func gemmRange(mm gemm.Func, g *GemmArgs, i0, i1 int) {
	a, b, c := g.A.Host, g.B.Host, g.C.Host
	for i := i0; i < i1; i++ {
		mm(g.TransA, g.TransB, g.M, g.N, g.K, g.Alpha,
			a[g.OffA+i*g.StrideA:], g.LDA,
			b[g.OffB+i*g.StrideB:], g.LDB,
			g.Beta, c[g.OffC+i*g.StrideC:], g.LDC)
	}
}
