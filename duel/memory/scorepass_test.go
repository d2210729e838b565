package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestScorePass compares scorePass (the AVX-512 kernel where it runs) with
// the plain loop on random, odd and zero sizes, with -Inf scores (rows
// gone) and many tied scores.
func TestScorePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 100, 2048, 2051} {
		for _, kind := range []string{"random", "ties", "gone", "allgone"} {
			t.Run(fmt.Sprintf("%d/%s", n, kind), func(t *testing.T) {
				score := make([]float64, n)
				ins, del := make([]int32, n), make([]int32, n)
				rank := rng.Perm(n)
				for c := range score {
					score[c] = float64(rng.IntN(1<<30)) * qUnit
					ins[c], del[c] = int32(rng.IntN(1<<23)-1<<22), int32(rng.IntN(1<<23)-1<<22)
					switch kind {
					case "ties":
						score[c], ins[c], del[c] = float64(rng.IntN(3)), int32(rng.IntN(2)), 0
					case "gone":
						if rng.IntN(3) == 0 {
							score[c] = math.Inf(-1)
						}
					case "allgone":
						score[c] = math.Inf(-1)
					}
				}
				want := slices.Clone(score)
				wantBest, wantSum := -1, 0.0
				for c := range want {
					want[c] += (float64(ins[c]) - float64(del[c])) * qUnit
					if !math.IsInf(want[c], -1) { // rows gone do not count
						wantSum += float64(ins[c])
					}
					if !math.IsInf(want[c], -1) && (wantBest < 0 || want[c] > want[wantBest] ||
						want[c] == want[wantBest] && rank[c] < rank[wantBest]) {
						wantBest = c
					}
				}
				best, sum := scorePass(score, ins, del, rank)
				if best != wantBest || sum != wantSum {
					t.Fatalf("best %d, sum %v; want %d, %v", best, sum, wantBest, wantSum)
				}
				for c := range want {
					if math.Float64bits(score[c]) != math.Float64bits(want[c]) {
						t.Fatalf("score[%d] = %v, want %v", c, score[c], want[c])
					}
				}
			})
		}
	}
}
