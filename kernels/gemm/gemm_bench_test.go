package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// benchShapes are the square sizes and the convolution shapes (M, N, K) of
// the engine's ResNet layers as GEMMs.
var benchShapes = [][3]int{
	{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
	{32768, 64, 576}, {2048, 256, 2304}, {512, 512, 4608}, {64, 576, 32768},
}

func benchOperands(m, n, k int) (a, b, c []float32) {
	r := rand.New(rand.NewPCG(1, 1))
	return randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
}

func reportGflops(b *testing.B, m, n, k int) float64 {
	gf := 2 * float64(m) * float64(n) * float64(k) * float64(b.N) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(gf, "GFLOP/s")
	return gf
}

// BenchmarkSgemm times C = A*B with the active kernel (ISA()) on Threads()
// threads, and gonum's Sgemm as a peer at 512 and 1024; the ratio is
// reported as the metric "x_gonum" on the gonum sub-benchmark.
func BenchmarkSgemm(b *testing.B) {
	for _, s := range benchShapes {
		m, n, k := s[0], s[1], s[2]
		name := fmt.Sprintf("%s/%dx%dx%d", ISA(), m, n, k)
		var ours float64
		b.Run(name, func(b *testing.B) {
			a, bm, c := benchOperands(m, n, k)
			Sgemm(false, false, m, n, k, 1, a, k, bm, n, 0, c, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Sgemm(false, false, m, n, k, 1, a, k, bm, n, 0, c, n)
			}
			ours = reportGflops(b, m, n, k)
		})
		if m == n && n == k && (m == 512 || m == 1024) {
			b.Run(fmt.Sprintf("gonum/%dx%dx%d", m, n, k), func(b *testing.B) {
				a, bm, c := benchOperands(m, n, k)
				impl := gonum.Implementation{}
				start := time.Now()
				for i := 0; i < b.N; i++ {
					impl.Sgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, bm, n, 0, c, n)
				}
				_ = start
				peer := reportGflops(b, m, n, k)
				if peer > 0 && ours > 0 {
					b.ReportMetric(ours/peer, "x_gonum")
					b.Logf("%dx%dx%d: duel %.1f GFLOP/s, gonum %.1f GFLOP/s, ratio %.1fx", m, n, k, ours, peer, ours/peer)
				}
			})
		}
	}
}

// BenchmarkSgemmTrans times the three transposed variants at 1024.
func BenchmarkSgemmTrans(b *testing.B) {
	const m, n, k = 1024, 1024, 1024
	for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		b.Run(fmt.Sprintf("tA=%v,tB=%v", tr[0], tr[1]), func(b *testing.B) {
			a, bm, c := benchOperands(m, n, k)
			for i := 0; i < b.N; i++ {
				Sgemm(tr[0], tr[1], m, n, k, 1, a, k, bm, n, 0, c, n)
			}
			reportGflops(b, m, n, k)
		})
	}
}

// BenchmarkMicroKernel times each micro-kernel alone on one thread with
// L1-resident panels (kc = the kernel's kc), the float32 ones and the
// bfloat16 ones (kc 256 words, 4 flops a word and column: a pair's two
// multiply-adds), whose ratio to the float32 kernel of the same tile is
// what the CPU's VDPBF16PS gives over its FMA.
func BenchmarkMicroKernel(b *testing.B) {
	run := func(kn *kernel, kc int, flopsPerK float64) {
		b.Run(kn.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			a, bp := randSlice(r, kc*kn.mr), randSlice(r, kc*kn.nr)
			c := make([]float32, kn.mr*kn.nr)
			for i := 0; i < b.N; i++ {
				kn.micro(kc, &a[0], &bp[0], &c[0], kn.nr, kn.nr, 1)
			}
			b.ReportMetric(flopsPerK*float64(kn.mr*kn.nr*kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	for _, kn := range available {
		run(kn, kn.kc, 2)
	}
	for _, kn := range detectBF16() {
		run(kn, 256, 4)
	}
}
