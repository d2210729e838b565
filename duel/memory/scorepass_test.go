package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestScorePass compares scorePass (the kernel DUEL_ISA selects) and every
// variant this CPU runs (scoreVariants: the Go loop, AVX-512, AVX2) with
// the plain loop on random, odd and zero sizes, with -Inf scores (rows
// gone) and many tied scores.
func TestScorePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	sizes := []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 100, 2048, 2051}
	for range 4 {
		sizes = append(sizes, rng.IntN(300))
	}
	variants := append([]variant[scoreFunc]{{"scorePass", scoreKernel}}, scoreVariants()...)
	for _, n := range sizes {
		for _, kind := range []string{"random", "ties", "gone", "allgone"} {
			for _, v := range variants {
				t.Run(fmt.Sprintf("%d/%s/%s", n, kind, v.name), func(t *testing.T) {
					testScorePass(t, rng, n, kind, v.kern)
				})
			}
		}
	}
}

// passInput returns the inputs of a score pass over n random slots of the
// given kind: "random", "ties" (scores and dots from tiny sets), "gone"
// (a third of the rows gone: score -Inf) or "allgone".
func passInput(rng *rand.Rand, n int, kind string) (score []float64, ins, del []int32, rank []int) {
	score = make([]float64, n)
	ins, del = make([]int32, n), make([]int32, n)
	rank = rng.Perm(n)
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
	return score, ins, del, rank
}

// testScorePass runs scorePassWith(kern) on n random slots of the given
// kind and checks it against the definition.
func testScorePass(t *testing.T, rng *rand.Rand, n int, kind string, kern scoreFunc) {
	score, ins, del, rank := passInput(rng, n, kind)
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
	best, sum := scorePassWith(kern, score, ins, del, rank)
	if best != wantBest || sum != wantSum {
		t.Fatalf("best %d, sum %v; want %d, %v", best, sum, wantBest, wantSum)
	}
	for c := range want {
		if math.Float64bits(score[c]) != math.Float64bits(want[c]) {
			t.Fatalf("score[%d] = %v, want %v", c, score[c], want[c])
		}
	}
}

// TestScorePassLanes compares the lanes an assembly score pass leaves in
// passBest (best score, rank and slot, and sum, per lane l: slots c%8 ==
// l) with its documented Go loop, on ties, rows gone and random scores.
func TestScorePassLanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for _, v := range scoreVariants() {
		if v.kern == nil {
			continue
		}
		for _, n := range []int{0, 8, 16, 64, 8 * rng.IntN(100), 2048} {
			for _, kind := range []string{"random", "ties", "gone"} {
				score, ins, del, rank := passInput(rng, n, kind)
				var got, want passBest
				for l := range got.score {
					got.score[l], got.rank[l], got.slot[l] = math.Inf(-1), math.MaxInt, -1
					got.dsum[l] = float64(l)
				}
				want = got
				ref := slices.Clone(score)
				for c := range ref {
					l := c % 8
					s := ref[c] + (float64(ins[c])-float64(del[c]))*qUnit
					ref[c] = s
					if s > math.Inf(-1) {
						want.dsum[l] += float64(ins[c])
					}
					if s > want.score[l] || s == want.score[l] && rank[c] < want.rank[l] {
						want.score[l], want.rank[l], want.slot[l] = s, rank[c], c
					}
				}
				got = v.kern(score, ins, del, rank, got)
				if got != want {
					t.Fatalf("%s, n=%d, %s: passBest\n%+v, want\n%+v", v.name, n, kind, got, want)
				}
				for c := range ref {
					if math.Float64bits(score[c]) != math.Float64bits(ref[c]) {
						t.Fatalf("%s, n=%d, %s: score[%d] = %v, want %v", v.name, n, kind, c, score[c], ref[c])
					}
				}
			}
		}
	}
}

// BenchmarkScorePass times scorePassWith on K = 2048 slots (a third of
// them gone), for every variant this CPU runs; each assembly variant
// reports its speed-up over the Go loop timed just before it in the same
// process.
//
//	go test -run=^$ -bench=BenchmarkScorePass ./duel/memory
func BenchmarkScorePass(b *testing.B) {
	const n = 2048
	rng := rand.New(rand.NewPCG(16, 17))
	score := make([]float64, n)
	ins, del := make([]int32, n), make([]int32, n)
	rank := rng.Perm(n)
	for c := range score {
		score[c] = float64(rng.IntN(1<<30)) * qUnit
		if rng.IntN(3) == 0 {
			score[c] = math.Inf(-1)
		}
		ins[c], del[c] = int32(rng.IntN(1<<21)-1<<20), int32(rng.IntN(1<<21)-1<<20)
	}
	var goNs float64
	for _, v := range scoreVariants() {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				scorePassWith(v.kern, score, ins, del, rank)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if v.kern == nil {
				goNs = ns
			} else if goNs > 0 {
				b.ReportMetric(goNs/ns, "speedup")
			}
		})
	}
}
