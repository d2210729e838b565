package gemm

import (
	"fmt"
	"testing"
)

// BenchmarkSgemmBF16AMX times SgemmBF16 on the AMX tiles against the
// AVX512_BF16 kernels in the same process (metric x_avx512bf16), on the
// machines that have the tiles (skipped elsewhere):
//
//	go test -run '^$' -bench SgemmBF16AMX -benchtime 1x ./kernels/gemm
func BenchmarkSgemmBF16AMX(b *testing.B) {
	if !amxUsable() || activeBF16 == nil {
		b.Skip("no usable AMX tiles on this machine")
	}
	defer func(k tileKernel) { amxKernel = k }(amxKernel)
	for _, s := range benchShapes {
		m, n, k := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			a, bm, c := benchOperands(m, n, k)
			flop := 2 * float64(m) * float64(n) * float64(k)
			timed := func(tk tileKernel) float64 {
				amxKernel = tk
				return bestNsPerCall(flop, func() { SgemmBF16(false, false, m, n, k, 1, a, k, bm, n, 0, c, n) })
			}
			var avx, amx float64
			for i := 0; i < b.N; i++ {
				avx = timed(nil)
				amx = timed(tileAMX)
			}
			b.ReportMetric(flop/amx, "GFLOP/s")
			b.ReportMetric(flop/avx, "avx512bf16-GFLOP/s")
			b.ReportMetric(avx/amx, "x_avx512bf16")
		})
	}
}
