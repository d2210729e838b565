package analysis

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkTSNE embeds N = 1000 rows of dimension 512 (10 classes) with the
// default settings (1000 iterations, PCA to 50 dimensions).
func BenchmarkTSNE(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x, _ := blobs(r, 1000, 512, 10, 0.5)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := TSNE(x, 1000, 512, DefaultTSNEConfig()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTSNEGradient times one gradient of N = 1000 points, the O(N²) work
// of an iteration: the fused one-pass, row-parallel gradient against the
// plain peer (the matrix of w_ij, then the sums, on one goroutine), reported
// as "naive/fused".
func BenchmarkTSNEGradient(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 1000
	p := randomAffinities(r, n, 10, 30)
	y := normals(r, 2*n)
	const reps = 5
	start := time.Now()
	for i := 0; i < reps; i++ {
		naiveGradient(y, p, n, 1)
	}
	naive := time.Since(start) / reps
	g := newGradient(n)
	grad := make([]float64, 2*n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.compute(y, p, 1, grad)
	}
	b.StopTimer()
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(naive.Seconds()/per.Seconds(), "naive/fused")
}
