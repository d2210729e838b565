package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// jacobiRounds returns the rounds a parallel fixed-point ("Jacobi")
// selection of one Protected update takes: each round scores every step t
// at once from the guessed victims of the steps before it, the first step
// whose best row differs from its guess is then exact, and the guess takes
// every step's best row from that step on; it stops at a round without a
// difference. It checks the result against the reference's victims.
func jacobiRounds(tb testing.TB, mem, batch []float32, z int) int {
	k, bb := len(mem)/z, len(batch)/z
	q := combinedQ(mem, batch, z)
	s0 := make([]float64, k)
	for c := 0; c < k; c++ {
		for j := 0; j < k; j++ {
			s0[c] += q(c, j)
		}
	}
	want := duelReference(&Arrival{Memory: mem, Batch: batch, Z: z}, Protected)
	g := slices.Repeat([]int{-1}, bb)
	score := make([]float64, k)
	dead := make([]bool, k)
	a := make([]int, bb)
	for round := 1; round <= bb+1; round++ {
		copy(score, s0)
		clear(dead)
		first := -1
		for t := 0; t < bb; t++ {
			best := -1
			for c := 0; c < k; c++ {
				if !dead[c] && (best < 0 || evictsBefore(false, score[c], c, false, score[best], best)) {
					best = c
				}
			}
			a[t] = best
			if first < 0 && best != g[t] {
				first = t
			}
			if J := g[t]; J >= 0 && !dead[J] {
				dead[J] = true
				for c := 0; c < k; c++ {
					score[c] -= q(J, c)
				}
			}
			for c := 0; c < k; c++ {
				score[c] += q(k+t, c)
			}
		}
		if first < 0 {
			if !slices.Equal(g, want) {
				tb.Fatalf("jacobi victims differ from the reference's")
			}
			return round
		}
		copy(g[first:], a[first:])
	}
	tb.Fatalf("no convergence")
	return 0
}

// BenchmarkJacobiRounds measures whether the B sequential steps of a
// Protected update could run as a few parallel rounds (jacobiRounds: each
// round is B x K independent score passes, grid-wide on a GPU, so that an
// update would cost rounds x ~10 us instead of B dependent steps). It logs
// the rounds per update of 256 steps on the stream of cudaduel's
// BenchmarkDUELKernel (K 4096, Z 128: random unit rows, then a pool of 8
// random batches that recur, 12 updates) and on clustered, imbalanced
// streams (clusteredRows, noise 0.3, 1 and 3; the 4 updates after 20).
//
// Run it with go test -run '^$' -bench JacobiRounds -benchtime 1x
// ./duel/memory (about 20 s). The rounds come close to the steps: nearly
// every victim depends on the one before it (removing a row lowers its
// near duplicates, the next candidates), so the fixed point gains about
// one step a round and a parallel selection of this kind would be slower
// than the one-block kernels (docs/cuda.md, "Fewer sequential rounds than
// steps").
func BenchmarkJacobiRounds(b *testing.B) {
	const k, bs, z = 4096, 256, 128
	b.Run("gpubench", func(b *testing.B) {
		var rounds []int
		for b.Loop() {
			rounds = rounds[:0]
			mem, pool := kernelBenchStream(b, k, bs, z)
			pol := NewDUEL(Protected)
			for u := range 12 {
				batch := pool[u%len(pool)]
				rounds = append(rounds, jacobiRounds(b, mem, batch, z))
				ev, err := pol.Evict(&Arrival{Memory: mem, Batch: batch, Z: z})
				if err != nil {
					b.Fatal(err)
				}
				mem = survivors(mem, batch, ev, z)
			}
		}
		b.Logf("rounds per update: %v", rounds)
	})
	for _, noise := range []float64{0.3, 1, 3} {
		b.Run(fmt.Sprintf("clustered%v", noise), func(b *testing.B) {
			var rounds []int
			for b.Loop() {
				rounds = rounds[:0]
				r := rand.New(rand.NewPCG(1, 2))
				draw := clusteredRows(r, z, noise)
				mem := draw(k)
				pol := NewDUEL(Protected)
				for u := range 24 {
					batch := draw(bs)
					if u >= 20 {
						rounds = append(rounds, jacobiRounds(b, mem, batch, z))
					}
					ev, err := pol.Evict(&Arrival{Memory: mem, Batch: batch, Z: z})
					if err != nil {
						b.Fatal(err)
					}
					mem = survivors(mem, batch, ev, z)
				}
			}
			b.Logf("rounds per update: %v", rounds)
		})
	}
}
