package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestBlendRow compares blendRow (the kernel DUEL_ISA selects) and every
// variant this CPU runs (blendVariants: the Go loop, AVX-512, AVX2) with
// the plain loop on random, odd and zero sizes, in place and not, with
// none, some or all of the entries taken from src, and with out-of-range
// indices (huge or negative) in the entries that are not.
func TestBlendRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	const after = 5
	sizes := []int{0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 100, 2048}
	for range 4 {
		sizes = append(sizes, rng.IntN(300))
	}
	variants := append([]variant[blendFunc]{{"blendRow", blendKernel}}, blendVariants()...)
	for _, n := range sizes {
		for _, inPlace := range []bool{false, true} {
			for _, fresh := range []float64{0, 0.1, 0.5, 1} {
				for _, v := range variants {
					t.Run(fmt.Sprintf("n=%d/inplace=%v/fresh=%v/%s", n, inPlace, fresh, v.name), func(t *testing.T) {
						testBlendRow(t, rng, n, inPlace, fresh, after, v.kern)
					})
				}
			}
		}
	}
}

// testBlendRow runs blendRowWith(kern) on n random entries (in place or
// not, a fraction fresh of them from src) and checks it against
// blendRowGo, and blendRowGo against the definition.
func testBlendRow(t *testing.T, rng *rand.Rand, n int, inPlace bool, fresh float64, after int32, kern blendFunc) {
	src := make([]int32, 3*n+50)
	for i := range src {
		src[i] = int32(rng.Uint32())
	}
	base := rng.IntN(len(src) - 2*n)
	row, idx, tick := make([]int32, n+3), make([]int32, n+3), make([]int32, n+3)
	for c := range row {
		row[c] = int32(rng.Uint32())
		if rng.Float64() < fresh {
			tick[c] = after + 1 + int32(rng.IntN(100))
			idx[c] = int32(rng.IntN(len(src) - base))
		} else {
			tick[c] = after - int32(rng.IntN(100))
			idx[c] = []int32{math.MaxInt32, 1 << 30, math.MinInt32, -1}[rng.IntN(4)]
		}
	}
	want := make([]int32, n)
	blendRowGo(want, row, src, base, idx, tick, after)
	for c := range want { // the reference against the definition
		w := row[c]
		if tick[c] > after {
			w = src[base+int(idx[c])]
		}
		if want[c] != w {
			t.Fatalf("blendRowGo: dst[%d] = %d, want %d", c, want[c], w)
		}
	}
	rowBefore := slices.Clone(row)
	dst := make([]int32, n)
	if inPlace {
		dst = row[:n]
	}
	blendRowWith(kern, dst, row, src, base, idx, tick, after)
	if !slices.Equal(dst, want) {
		for c := range want {
			if dst[c] != want[c] {
				t.Fatalf("dst[%d] = %d, want %d (tick %d, idx %d)", c, dst[c], want[c], tick[c], idx[c])
			}
		}
	}
	if !inPlace && !slices.Equal(row, rowBefore) {
		t.Fatal("row changed")
	}
	if inPlace && !slices.Equal(row[n:], rowBefore[n:]) {
		t.Fatal("row changed past len(dst)")
	}
}

// blendCase is a benchmark setting of blendRow: src holds rings ring
// buffers of rows*width values; each call blends, in place, a row of a
// K x K block (K = 2048, 16 MB): row r%K with base = r*width and K entries
// with idx[c] = t*rows*width + bp (t a random ring, bp a random offset
// below width; tick[c] random in [0, 2^20)). The rows r (below rows) come
// in order: the same every call (hot), r = 0, 1, 2, ... (sequential, as in
// fold) or random (as in dotsOf). Each call has its own after, so that the
// fraction of entries with tick > after is random in [freshLo, freshHi]
// (and the Go loop's branches cannot be learnt).
type blendCase struct {
	name        string
	rings, rows int
	width, k    int
	order       string
	freshLo     float64
	freshHi     float64
}

// blendCases: a hot row (src lines in L1/L2); the rows in order, or at
// random, of 16 MB of rings (the rings and the block fill the 32 MB L3);
// random rows of 128 MB of rings (out of cache); fewer and more fresh
// entries.
var blendCases = []blendCase{
	{"hot-16MB", 8, 2048, 256, 2048, "hot", 0, 1},
	{"sequential-16MB", 8, 2048, 256, 2048, "sequential", 0, 1},
	{"random-16MB", 8, 2048, 256, 2048, "random", 0, 1},
	{"random-128MB", 8, 16384, 256, 2048, "random", 0, 1},
	{"random-16MB-fresh0-20%", 8, 2048, 256, 2048, "random", 0, 0.2},
	{"random-16MB-fresh80-100%", 8, 2048, 256, 2048, "random", 0.8, 1},
}

// blendSetup is a blendCase's data: src, the block, idx, tick, and the
// sequence of rows to blend with their after.
type blendSetup struct {
	src, block, idx, tick []int32
	rows                  []int
	after                 []int32
	width, k              int
}

// setup builds c's data.
func (c blendCase) setup() *blendSetup {
	rng := rand.New(rand.NewPCG(14, 15))
	s := &blendSetup{
		src:   make([]int32, c.rings*c.rows*c.width),
		block: make([]int32, c.k*c.k),
		idx:   make([]int32, c.k),
		tick:  make([]int32, c.k),
		rows:  make([]int, 4096),
		after: make([]int32, 4096),
		width: c.width,
		k:     c.k,
	}
	for i := range s.src {
		s.src[i] = int32(i)
	}
	for i := range s.block {
		s.block[i] = int32(i)
	}
	for j := range s.idx {
		s.idx[j] = int32(rng.IntN(c.rings)*c.rows*c.width + rng.IntN(c.width))
		s.tick[j] = int32(rng.IntN(1 << 20))
	}
	r0 := rng.IntN(c.rows)
	for i := range s.rows {
		switch c.order {
		case "hot":
			s.rows[i] = r0
		case "sequential":
			s.rows[i] = i % c.rows
		case "random":
			s.rows[i] = rng.IntN(c.rows)
		}
		fresh := c.freshLo + (c.freshHi-c.freshLo)*rng.Float64()
		s.after[i] = int32((1 - fresh) * (1 << 20))
	}
	return s
}

// run blends iters rows with f and returns the time per row.
func (s *blendSetup) run(iters int, f func(dst, row, src []int32, base int, idx, tick []int32, after int32)) time.Duration {
	start := time.Now()
	for i := 0; i < iters; i++ {
		r := s.rows[i%len(s.rows)]
		row := s.block[r%s.k*s.k : (r%s.k+1)*s.k]
		f(row, row, s.src, r*s.width, s.idx, s.tick, s.after[i%len(s.after)])
	}
	return time.Since(start) / time.Duration(iters)
}

// BenchmarkBlendRow times every assembly blend this CPU runs
// (blendVariants: AVX-512, AVX2) on the blendCases, and the Go loop on the
// same rows in the same process (median of 5 rounds each, alternating):
// ns/op is the kernel's (through blendRowWith), go-ns/op the loop's,
// speedup their ratio.
//
//	go test -run=^$ -bench=BenchmarkBlendRow ./duel/memory
func BenchmarkBlendRow(b *testing.B) {
	for _, c := range blendCases {
		for _, v := range blendVariants() {
			if v.kern == nil {
				continue
			}
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				s := c.setup()
				kern := func(dst, row, src []int32, base int, idx, tick []int32, after int32) {
					blendRowWith(v.kern, dst, row, src, base, idx, tick, after)
				}
				var fast, slow []float64
				b.ResetTimer()
				for round := 0; round < 5; round++ {
					fast = append(fast, float64(s.run(max(1, b.N/5), kern)))
					b.StopTimer()
					slow = append(slow, float64(s.run(max(1, b.N/5), blendRowGo)))
					b.StartTimer()
				}
				b.StopTimer()
				f, g := median(fast), median(slow)
				b.ReportMetric(f, "ns/op")
				b.ReportMetric(g, "go-ns/op")
				b.ReportMetric(g/f, "speedup")
			})
		}
	}
}
