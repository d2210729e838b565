package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkCertifiedRounds measures what a DUEL update that certifies
// several steps at once could rely on (docs/cuda.md, "DUEL on the
// device"): the steps of an update run in rounds, each round taking the m
// candidates of highest score (unprotected rows held), replaying the
// steps on them alone, and accepting the steps until one whose victim is
// not certified by a bound on every other row c:
//
//	score_c(t) <= score_c(t0) + sum_{s<t} q(i_s, c) - sum of the t-t0 smallest q(v, c), v a candidate,
//
// (i_s the rows inserted since the round began; a victim is a candidate
// or a row inserted in the round) strictly below the victim's score, or
// equal with a higher position. It reports rounds per update of 256 steps
// (fewer is better: the one-block kernels take a round a step) for m 32 and
// 128 (rounds/update_m*), and the rounds when the other rows' scores are
// instead computed exactly from the replayed victims' and inserted rows
// of sim, at most 64 steps a round (exact_rounds/update_m*: a round then
// ends only at a victim outside the candidates, so 4 is the least), on
// clustered, imbalanced streams (10 clusters, class 0 with
// probability 0.75, noise 1 around the centres, K 4096, Z 128) after 40
// updates of warm-up, over 3 updates. The steps are the reference's
// (duelReferenceSteps): it checks what a certified replay would accept,
// not an implementation of one.
func BenchmarkCertifiedRounds(b *testing.B) {
	const z, k, bb = 128, 4096, 256
	for _, adm := range []Admission{Protected, Compete} {
		b.Run(adm.String(), func(b *testing.B) {
			var rounds map[int]int
			for b.Loop() {
				rounds = map[int]int{}
				r := rand.New(rand.NewPCG(1, 2))
				draw := clusteredRows(r, z, 1)
				mem := draw(k)
				pol := NewDUEL(adm)
				for range 40 {
					batch := draw(bb)
					ev, err := pol.Evict(&Arrival{Memory: mem, Batch: batch, Z: z})
					if err != nil {
						b.Fatal(err)
					}
					mem = survivors(mem, batch, ev, z)
				}
				for range 3 {
					batch := draw(bb)
					for m, n := range certifiedRounds(mem, batch, adm, z, []int{32, 128}) {
						rounds[m] += n
					}
					for m, n := range certifiedRoundsT(mem, batch, adm, z, []int{32, 128}, 64) {
						rounds[1000+m] += n
					}
					ev, err := pol.Evict(&Arrival{Memory: mem, Batch: batch, Z: z})
					if err != nil {
						b.Fatal(err)
					}
					mem = survivors(mem, batch, ev, z)
				}
			}
			for _, m := range []int{32, 128} {
				b.ReportMetric(float64(rounds[m])/3, fmt.Sprintf("rounds/update_m%d", m))
				b.ReportMetric(float64(rounds[1000+m])/3, fmt.Sprintf("exact_rounds/update_m%d", m))
			}
		})
	}
}

// clusteredRows returns a generator of L2-normalised rows of z values:
// one of 10 Gaussian centres (the first with probability 0.75) plus
// Gaussian noise of the given size.
func clusteredRows(r *rand.Rand, z int, noise float64) func(n int) []float32 {
	centres := make([]float64, 10*z)
	for i := range centres {
		centres[i] = r.NormFloat64()
	}
	return func(n int) []float32 {
		rows := make([]float32, n*z)
		for i := range n {
			c := 0
			if r.Float64() > 0.75 {
				c = 1 + r.IntN(9)
			}
			v, norm := make([]float64, z), 0.0
			for j := range v {
				v[j] = centres[c*z+j] + noise*r.NormFloat64()
				norm += v[j] * v[j]
			}
			for j := range v {
				rows[i*z+j] = float32(v[j] / math.Sqrt(norm))
			}
		}
		return rows
	}
}

// survivors returns the rows held after an update: the memory's rows and
// then the batch's at the positions keptPositions leaves, in order.
func survivors(mem, batch []float32, evicted []int, z int) []float32 {
	all := append(slices.Clone(mem), batch...)
	var next []float32
	for _, p := range keptPositions(evicted, len(mem)/z) {
		next = append(next, all[p*z:(p+1)*z]...)
	}
	return next
}

// certifiedRounds replays one update (the reference's steps and scores)
// and returns, per candidate count m, the rounds a certified replay would
// take (see BenchmarkCertifiedRounds).
func certifiedRounds(mem, batch []float32, adm Admission, z int, ms []int) map[int]int {
	return certifiedRoundsT(mem, batch, adm, z, ms, 0)
}

// certifiedRoundsT is certifiedRounds, or with exactTmax > 0 the rounds
// when the other rows' scores are computed exactly from the replayed
// victims' rows: a round ends at the first victim outside the
// candidates, or after exactTmax steps.
func certifiedRoundsT(mem, batch []float32, adm Admission, z int, ms []int, exactTmax int) map[int]int {
	k, bb := len(mem)/z, len(batch)/z
	n := k + bb
	type snapshot struct {
		score             []float64
		selected, protect []bool
	}
	var snaps []snapshot
	ev := duelReferenceSteps(&Arrival{Memory: mem, Batch: batch, Z: z}, adm, func(score []float64, selected, protected []bool) {
		snaps = append(snaps, snapshot{slices.Clone(score), slices.Clone(selected), slices.Clone(protected)})
	})
	q := combinedQ(mem, batch, z)
	out := map[int]int{}
	for _, m := range ms {
		for t0 := 0; t0 < bb; {
			out[m]++
			s := snaps[t0]
			var order []int
			for c, ok := range s.selected {
				if ok && !s.protect[c] {
					order = append(order, c)
				}
			}
			slices.SortFunc(order, func(x, y int) int {
				if evictsBefore(false, s.score[x], x, false, s.score[y], y) {
					return -1
				}
				return 1
			})
			cand := make([]bool, n)
			for _, c := range order[:min(m, len(order))] {
				cand[c] = true
			}
			others := append([]int(nil), order[min(m, len(order)):]...)
			bound := make([]float64, len(others)) // score_c(t0) + sum q(i_s, c)
			low := make([][]float64, len(others)) // q(v, c) over the candidates, ascending
			for x, c := range others {
				bound[x] = s.score[c]
				for _, v := range order[:min(m, len(order))] {
					low[x] = append(low[x], q(v, c))
				}
				slices.Sort(low[x])
			}
			t := t0 + 1
			for ; t < bb; t++ {
				if J := ev[t-1]; !cand[J] && J < k {
					break // step t-1's victim was not a candidate: the replay chose another
				}
				if exactTmax > 0 {
					if t-t0 >= exactTmax {
						break
					}
					if adm == Compete {
						cand[k+t-1] = true
					}
					continue
				}
				i := k + t - 1 // inserted by step t-1
				if adm == Compete {
					cand[i] = true
				}
				ok := true
				for x, c := range others {
					bound[x] += q(i, c)
					var sub float64
					for _, v := range low[x][:min(t-t0, len(low[x]))] {
						sub += v
					}
					if J := ev[t]; !evictsBefore(false, snaps[t].score[J], J, false, bound[x]-sub, c) {
						ok = false
						break
					}
				}
				if !ok {
					break
				}
			}
			t0 = t
		}
	}
	return out
}
