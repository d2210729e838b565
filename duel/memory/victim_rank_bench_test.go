package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkVictimRank measures what a prefetch of the next victims' rows
// could rely on (docs/cuda.md, "DUEL on the device"; cudaduel's
// MemoryOptions.Prefetch): how often step t+1's victim is among the top k
// candidates of the scores known when step t's victim is chosen, before
// step t's removal and insertion. It runs duelReference's steps on
// clustered, imbalanced streams (10 clusters, class 0 with probability
// 0.75, rows the cluster's centre plus Gaussian noise, L2-normalised;
// K 1024, B 256, Z 128, 4 updates) and reports the percentages as top1%
// .. top8% (top1: the runner-up of step t is step t+1's victim).
func BenchmarkVictimRank(b *testing.B) {
	for _, adm := range []Admission{Protected, Compete} {
		for _, noise := range []float64{0.3, 1, 3} {
			b.Run(fmt.Sprintf("%v/noise%g", adm, noise), func(b *testing.B) {
				var within [4]int // next victim within the top 1, 2, 4, 8 runners-up
				steps := 0
				for b.Loop() {
					within, steps = [4]int{}, 0
					r := rand.New(rand.NewPCG(1, 2))
					for range 4 {
						for _, rank := range victimRanks(r, adm, 128, 1024, 256, noise) {
							for i, top := range []int{1, 2, 4, 8} {
								if rank >= 0 && rank < top {
									within[i]++
								}
							}
							steps++
						}
					}
				}
				for i, top := range []int{1, 2, 4, 8} {
					b.ReportMetric(100*float64(within[i])/float64(steps), fmt.Sprintf("top%d%%", top))
				}
			})
		}
	}
}

// victimRanks runs one update of k rows held and bb incoming ones drawn
// from r as BenchmarkVictimRank says, and returns for each step after the
// first the rank of its victim among the previous step's candidates other
// than that step's victim, in eviction order (-1: not among them).
func victimRanks(r *rand.Rand, adm Admission, z, k, bb int, noise float64) []int {
	rows := clusteredRows(r, z, noise)(k + bb)
	var ranks, prev []int
	duelReferenceSteps(&Arrival{Memory: rows[:k*z], Batch: rows[k*z:], Z: z}, adm, func(score []float64, selected, protected []bool) {
		var order []int // the candidates, the victim first
		for c, ok := range selected {
			if ok {
				order = append(order, c)
			}
		}
		slices.SortFunc(order, func(x, y int) int {
			if evictsBefore(protected[x], score[x], x, protected[y], score[y], y) {
				return -1
			}
			return 1
		})
		if prev != nil {
			ranks = append(ranks, slices.Index(prev[1:], order[0]))
		}
		prev = order
	})
	return ranks
}
