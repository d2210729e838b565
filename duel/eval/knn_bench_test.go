package eval

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// naiveLoopKNN is the plain-loop peer of KNN for the benchmark: one float32
// dot product per (test, train) pair in plain Go on one goroutine, then the
// same heap and vote.
func naiveLoopKNN(train, test *Features, cfg KNNConfig, classes int) float64 {
	tr, te := train.Normalized(), test.Normalized()
	sims := make([]float32, tr.N)
	var h neighbourHeap
	sc := make([]float64, classes)
	var acc accuracy
	for i := 0; i < te.N; i++ {
		q := te.Row(i)
		for j := 0; j < tr.N; j++ {
			t := tr.Row(j)
			var s float32
			for c, v := range q {
				s += v * t[c]
			}
			sims[j] = s
		}
		h.topK(sims, cfg.K)
		clear(sc)
		for _, nb := range h {
			sc[tr.Labels[nb.idx]] += math.Exp(float64(nb.sim) / cfg.Temperature)
		}
		acc.add(sc, int(te.Labels[i]))
	}
	return acc.result(classes, tr.N).Top1
}

// BenchmarkKNN classifies 1k test rows against 10k training rows of
// dimension 512 (k = 200, weighted) with KNN (SGEMM similarities) and reports
// the time of the plain-loop peer over KNN's as "naive/sgemm".
func BenchmarkKNN(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	train := clusters(r, 10000, 512, 10, 0.2)
	test := clusters(r, 1000, 512, 10, 0.2)
	cfg := DefaultKNNConfig()
	start := time.Now()
	naiveTop1 := naiveLoopKNN(train, test, cfg, 10)
	naive := time.Since(start)
	b.ResetTimer()
	var res Result
	for i := 0; i < b.N; i++ {
		var err error
		if res, err = KNN(train, test, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	per := b.Elapsed() / time.Duration(b.N)
	if math.Abs(res.Top1-naiveTop1) > 0.002 {
		b.Errorf("top1 %v, naive %v", res.Top1, naiveTop1)
	}
	b.ReportMetric(naive.Seconds()/per.Seconds(), "naive/sgemm")
	b.ReportMetric(float64(naive.Milliseconds()), "naive_ms")
}

// BenchmarkKNNSelect selects the k = 200 nearest of 50000 training rows for
// a chunk of 256 test rows (a CIFAR-10 kNN chunk) from a similarity block:
// "heap" is the host path kNN had (the heap per row, rows split among
// GOMAXPROCS goroutines, heap order), "cpu" tensor.TopK on the CPU backend
// (kernels/topk: the heap then a sort of the k), "hostless" the fallback
// (the block copied to the host, then kernels/topk) and "hostlessfused"
// the capability on a device (the CPU kernel behind opaque handles, only
// the 256 x 200 results copied out).
func BenchmarkKNNSelect(b *testing.B) {
	const m, n, k = knnChunk, 50000, 200
	r := rand.New(rand.NewPCG(3, 4))
	sims := make([]float32, m*n)
	for i := range sims {
		sims[i] = float32(r.NormFloat64() * 0.2)
	}
	b.Run("heap", func(b *testing.B) {
		workers := runtime.GOMAXPROCS(0)
		heaps := make([]neighbourHeap, workers)
		for i := 0; i < b.N; i++ {
			var wg sync.WaitGroup
			per := (m + workers - 1) / workers
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(h *neighbourHeap, lo, hi int) {
					defer wg.Done()
					for r := lo; r < hi; r++ {
						h.topK(sims[r*n:(r+1)*n], k)
					}
				}(&heaps[w], w*per, min((w+1)*per, m))
			}
			wg.Wait()
		}
	})
	for _, dev := range []tensor.Device{tensor.CPU, hostless.Device, hostless.FusedDevice} {
		x, err := tensor.FromSlice(sims, m, n).To(dev)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(dev.BackendName(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := tensor.TopK(x, k); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
