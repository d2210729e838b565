package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkVictimRowCache measures what a cache of sim's rows in a
// selection kernel's shared memory could rely on, on a stream shaped as
// cudaduel's BenchmarkDUELKernel's (K 4096, B 256, Z 128, Protected:
// random unit rows, then a pool of 8 random batches that recur, 12
// updates): how often step t+1's victim is already cached when
//   - runnerupT: each step caches the runner-up of its own selection, the
//     last T such rows kept (a victim leaves the cache);
//   - nearest: step t+1's victim is the held row nearest to the batch
//     row step t inserted (a cache filled ahead from a precomputed
//     nearest neighbour), split into the updates before the memory holds
//     the pool's rows (early: the first 8) and after (late).
//
// Run it with go test -run '^$' -bench VictimRowCache -benchtime 1x
// ./duel/memory. Either cache would miss most steps' victims, which
// would still wait for row J, so neither is built (docs/cuda.md, "DUEL on
// the device").
func BenchmarkVictimRowCache(b *testing.B) {
	const k, bs, z, updates = 4096, 256, 128, 12
	caches := []int{1, 4, 16}
	for b.Loop() {
		mem, pool := kernelBenchStream(b, k, bs, z)
		hits := make([]int, len(caches))
		var nearHits, nearSteps [2]int // early, late
		steps := 0
		for u := range updates {
			batch := pool[u%len(pool)]
			nearest := nearestHeld(mem, batch, k, bs, z)
			cache := make([][]int, len(caches)) // positions, oldest first
			step, late := 0, min(u/len(pool), 1)
			ev := duelReferenceSteps(&Arrival{Memory: mem, Batch: batch, Z: z}, Protected, func(score []float64, selected, protected []bool) {
				victim, runnerUp := -1, -1
				for c, ok := range selected {
					if !ok {
						continue
					}
					switch {
					case victim < 0 || evictsBefore(protected[c], score[c], c, protected[victim], score[victim], victim):
						victim, runnerUp = c, victim
					case runnerUp < 0 || evictsBefore(protected[c], score[c], c, protected[runnerUp], score[runnerUp], runnerUp):
						runnerUp = c
					}
				}
				if step > 0 {
					steps++
					for i := range caches {
						if slices.Contains(cache[i], victim) {
							hits[i]++
						}
					}
					nearSteps[late]++
					if nearest[step-1] == victim {
						nearHits[late]++
					}
				}
				for i, t := range caches {
					c := slices.DeleteFunc(cache[i], func(p int) bool { return p == victim || p == runnerUp })
					if runnerUp >= 0 {
						c = append(c, runnerUp)
					}
					cache[i] = c[max(0, len(c)-t):]
				}
				step++
			})
			mem = keptRows(mem, batch, keptPositions(ev, k), z)
		}
		for i, t := range caches {
			b.ReportMetric(100*float64(hits[i])/float64(steps), fmt.Sprintf("runnerup%d%%", t))
		}
		b.ReportMetric(100*float64(nearHits[0])/float64(nearSteps[0]), "nearest_early%")
		b.ReportMetric(100*float64(nearHits[1])/float64(nearSteps[1]), "nearest_late%")
	}
}

// nearestHeld returns, for each of the bs batch rows, the position of the
// held row (of k) with the largest grid dot product.
func nearestHeld(mem, batch []float32, k, bs, z int) []int {
	gm, gb := make([]float32, len(mem)), make([]float32, len(batch))
	toGrid(gm, mem)
	toGrid(gb, batch)
	dots := make([]float32, bs*k)
	gridDots(dots, gb, gm, bs, k, z)
	out := make([]int, bs)
	for i := range out {
		row := dots[i*k : (i+1)*k]
		out[i] = slices.Index(row, slices.Max(row))
	}
	return out
}

// keptRows returns the memory's rows after the evictions: the positions
// kept (of mem's k rows, then the batch's) in order.
func keptRows(mem, batch []float32, kept []int, z int) []float32 {
	k := len(mem) / z
	out := make([]float32, 0, len(mem))
	for _, p := range kept {
		if p < k {
			out = append(out, mem[p*z:(p+1)*z]...)
		} else {
			out = append(out, batch[(p-k)*z:(p-k+1)*z]...)
		}
	}
	return out
}

// kernelBenchStream returns the start of the stream of cudaduel's
// BenchmarkDUELKernel: k random unit rows of z values held, and a pool of
// 8 random batches of bs rows that recur (seeded: the same every call).
func kernelBenchStream(tb testing.TB, k, bs, z int) (mem []float32, pool [][]float32) {
	r := rand.New(rand.NewPCG(1, 2))
	mem = make([]float32, k*z)
	if err := normalizeRows(mem, unitRows(r, k, z), z); err != nil {
		tb.Fatal(err)
	}
	for range 8 {
		batch := make([]float32, bs*z)
		if err := normalizeRows(batch, unitRows(r, bs, z), z); err != nil {
			tb.Fatal(err)
		}
		pool = append(pool, batch)
	}
	return mem, pool
}
