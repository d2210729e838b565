package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/duel-ssl/duel/internal/proctime"
)

// benchShapes are the (K, B, Z) of the issue; the first is the paper's
// CIFAR-10 setting (memory 2048, batch 256, 256-d projections).
var benchShapes = [][3]int{{2048, 256, 256}, {4096, 256, 128}, {8192, 512, 128}}

// fullMemory returns a full memory of k random rows of z values managed by
// p, and a source of random batches.
func fullMemory(b *testing.B, k, z int, p Policy) (*Memory, func(n int) []float32) {
	rng := rand.New(rand.NewPCG(1, 2))
	gauss := func(n int) []float32 {
		v := make([]float32, n*z)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	m, err := New(k, z, p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Add(gauss(k), nil, nil, 0); err != nil {
		b.Fatal(err)
	}
	return m, gauss
}

// BenchmarkDUELUpdate times one update (Memory.Add of a batch of B rows to
// a full memory) with the fast DUEL, and reports the reference's time on the
// same memory, measured in the same process, and the speed-up. fast-ms is
// the mean wall time of an update (folds included), fast-cpu-ms the CPU
// time it used on all threads (less sensitive to other processes).
//
//	go test -run=^$ -bench=BenchmarkDUELUpdate ./duel/memory
func BenchmarkDUELUpdate(b *testing.B) {
	for _, s := range benchShapes {
		k, bs, z := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("K=%d,B=%d,Z=%d", k, bs, z), func(b *testing.B) {
			m, gauss := fullMemory(b, k, z, NewDUEL(Protected))
			batches := [][]float32{gauss(bs), gauss(bs), gauss(bs), gauss(bs)}
			if _, err := m.Add(batches[0], nil, nil, 0); err != nil { // carried state built
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu0 := proctime.CPUOrZero()
			for i := 0; i < b.N; i++ {
				if _, err := m.Add(batches[i%len(batches)], nil, nil, i); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			fast := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric((proctime.CPUOrZero()-cpu0).Seconds()*1e3/float64(b.N), "fast-cpu-ms")
			naive := timeReference(b, m, batches, 3)
			b.ReportMetric(naive*1e3, "naive-ms")
			b.ReportMetric(fast*1e3, "fast-ms")
			b.ReportMetric(naive/fast, "speedup")
		})
	}
}

// timeReference returns the median time of reps updates of a copy of m's
// state with the reference DUEL.
func timeReference(b *testing.B, m *Memory, batches [][]float32, reps int) float64 {
	ref, err := New(m.Size(), m.Dim(), NewDUELReference(Protected))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ref.Add(m.Rows(), nil, nil, 0); err != nil {
		b.Fatal(err)
	}
	var times []float64
	for i := 0; i < reps; i++ {
		start := time.Now()
		if _, err := ref.Add(batches[i%len(batches)], nil, nil, i); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start).Seconds())
	}
	return median(times)
}

// BenchmarkDUELCarry compares the two carried states of the fast path at the
// paper's shape: the K x K block, and the scores alone (each evicted row's
// similarities recomputed).
func BenchmarkDUELCarry(b *testing.B) {
	k, bs, z := 2048, 256, 256
	for _, mode := range []string{"block", "scores"} {
		b.Run(mode, func(b *testing.B) {
			d := NewDUEL(Protected)
			if mode == "scores" {
				d.MaxBlockBytes = 0
			}
			m, gauss := fullMemory(b, k, z, d)
			batches := [][]float32{gauss(bs), gauss(bs), gauss(bs)}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Add(batches[i%len(batches)], nil, nil, i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
