package memory

import (
	"math"
	"math/rand/v2"
	"testing"
)

// clusteredStream returns n rows of z values from 10 classes: class c is a
// fixed random unit centre plus Gaussian noise of the given scale, drawn
// with probability rhoMax for class 0 and (1-rhoMax)/9 for each other class.
// With noise 0 and z >= 10 the centres are the basis vectors (ideal
// features: q = 1 within a class, 1/2 across).
func clusteredStream(rng *rand.Rand, n, z int, rhoMax, noise float64) ([]float32, []int32) {
	const classes = 10
	centres := make([][]float64, classes)
	for c := range centres {
		centres[c] = make([]float64, z)
		if noise == 0 {
			centres[c][c] = 1
			continue
		}
		// Random, then orthogonalised against the previous centres
		// (Gram-Schmidt): well separated, q = 1/2 between centres.
		for i := range centres[c] {
			centres[c][i] = rng.NormFloat64()
		}
		for _, prev := range centres[:c] {
			var dot, pp float64
			for i := range prev {
				dot += prev[i] * centres[c][i]
				pp += prev[i] * prev[i]
			}
			for i := range prev {
				centres[c][i] -= dot / pp * prev[i]
			}
		}
	}
	rows := make([]float32, n*z)
	labels := make([]int32, n)
	for r := 0; r < n; r++ {
		c := 0
		if rng.Float64() >= rhoMax {
			c = 1 + rng.IntN(classes-1)
		}
		labels[r] = int32(c)
		var norm float64
		for _, v := range centres[c] {
			norm += v * v
		}
		for i := 0; i < z; i++ {
			rows[r*z+i] = float32(centres[c][i]/math.Sqrt(norm) + noise*rng.NormFloat64())
		}
	}
	return rows, labels
}

// TestClassEntropy replays a stream with one dominant class (rho_max =
// 0.75, class entropy ~1.1 nats) through FIFO and DUEL. FIFO's memory
// mirrors the stream; DUEL's approaches the uniform ln 10 = 2.30 nats.
func TestClassEntropy(t *testing.T) {
	const k, b, z, updates = 512, 64, 32, 150
	rng := rand.New(rand.NewPCG(11, 12))
	rows, labels := clusteredStream(rng, k+updates*b, z, 0.75, 0.05)
	stream := Entropy(countLabels(labels, 10))
	if math.Abs(stream-1.11) > 0.05 {
		t.Fatalf("stream class entropy %.3f, want ~1.11", stream)
	}
	for _, c := range []struct {
		policy   Policy
		min, max float64
	}{
		{NewFIFO(), stream - 0.25, stream + 0.25},
		{NewDUEL(Protected), 2.1, math.Log(10)},
		{NewDUEL(Compete), 2.1, math.Log(10)},
	} {
		m, _ := New(k, z, c.policy)
		for off := 0; off < len(labels); off += b {
			if _, err := m.Add(rows[off*z:(off+b)*z], nil, labels[off:off+b], off/b); err != nil {
				t.Fatal(err)
			}
		}
		h := m.ClassEntropy()
		t.Logf("%s: memory class entropy %.3f nats (stream %.3f)", c.policy.Name(), h, stream)
		if h < c.min || h > c.max {
			t.Errorf("%s: memory class entropy %.3f, want %.2f..%.2f", c.policy.Name(), h, c.min, c.max)
		}
	}
}

func countLabels(labels []int32, n int) []int {
	counts := make([]int, n)
	for _, l := range labels {
		counts[l]++
	}
	return counts
}

// TestSafeness checks the paper's safeness proposition with ideal features
// (all rows of a class identical, orthogonal classes): DUEL never evicts a
// row of a class smaller than another class held. In Protected mode the
// rows that entered during the batch are out of reach, so the statement
// holds among the classes that have a row DUEL may evict.
func TestSafeness(t *testing.T) {
	const k, b, z = 60, 16, 12
	for _, adm := range []Admission{Compete, Protected} {
		rng := rand.New(rand.NewPCG(13, 14))
		rows, labels := clusteredStream(rng, k+80*b, z, 0.75, 0)
		rec := &recorder{Policy: NewDUEL(adm)}
		m, _ := New(k, z, rec)
		m.Add(rows[:k*z], nil, labels[:k], 0)
		for off := k; off < len(labels); off += b {
			held := append([]int32(nil), m.Labels()...)
			batch := labels[off : off+b]
			if _, err := m.Add(rows[off*z:(off+b)*z], nil, batch, 0); err != nil {
				t.Fatal(err)
			}
			ev := rec.log[len(rec.log)-1]
			// Replay the evictions on the labels.
			label := func(p int) int32 {
				if p < k {
					return held[p]
				}
				return batch[p-k]
			}
			present := map[int]bool{}
			for p := range held {
				present[p] = true
			}
			for i, J := range ev {
				all, evictable := map[int32]int{}, map[int32]int{}
				for p := range present {
					all[label(p)]++
					if adm == Compete || p < k {
						evictable[label(p)]++
					}
				}
				for c, n := range all {
					if n > all[label(J)] && evictable[c] > 0 {
						t.Fatalf("%v, update at row %d, step %d: evicted a row of class %d (%d held) while class %d has %d",
							adm, off, i, label(J), all[label(J)], c, n)
					}
				}
				delete(present, J)
				present[k+i] = true
			}
		}
	}
}
