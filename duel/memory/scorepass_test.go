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
// the definition on random, odd and zero sizes, with rows gone, many tied
// keys and the shifts of small and large memories.
func TestScorePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	sizes := []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 100, 2048, 2051}
	for range 4 {
		sizes = append(sizes, rng.IntN(300))
	}
	variants := append([]variant[scoreFunc]{{"scorePass", scoreKernel}}, scoreVariants()...)
	for _, n := range sizes {
		for _, kind := range []string{"random", "ties", "gone", "allgone", "extreme"} {
			for _, shift := range []uint{0, 11, 17} {
				for _, v := range variants {
					t.Run(fmt.Sprintf("%d/%s/shift%d/%s", n, kind, shift, v.name), func(t *testing.T) {
						testScorePass(t, rng, n, kind, shift, v.kern)
					})
				}
			}
		}
	}
}

// passInput returns the keys and dots of a score pass over n random rows of
// the given kind, for keys with shift rank bits: "random", "ties" (scores
// and dots from tiny sets), "gone" (a third of the rows gone, their keys
// moved by earlier passes), "allgone", or "extreme" (scores and dots at
// the bounds keyShift allows for 2^17 rows).
func passInput(rng *rand.Rand, n int, kind string, shift uint) (key []int64, ins, del []int32) {
	key = make([]int64, n)
	ins, del = make([]int32, n), make([]int32, n)
	rmax := int64(1)<<shift - 1
	for c := range key {
		s := rng.Int64N(1<<30) - 1<<20
		ins[c], del[c] = int32(rng.IntN(1<<23)-1<<22), int32(rng.IntN(1<<23)-1<<22)
		switch kind {
		case "ties":
			s, ins[c], del[c] = rng.Int64N(3), int32(rng.IntN(2)), 0
		case "extreme":
			s = (1<<42 - 1) * (1 - 2*rng.Int64N(2)) // 2^25 * 2^17 in magnitude
			ins[c], del[c] = 1<<23-1, -(1<<23 - 1)
			if rng.IntN(2) == 0 {
				ins[c], del[c] = del[c], ins[c]
			}
		}
		key[c] = s<<shift | rng.Int64N(rmax+1)
		if kind == "allgone" || kind != "ties" && rng.IntN(3) == 0 {
			key[c] = keyGone + rng.Int64N(1<<40) - 1<<39
		}
	}
	return key, ins, del
}

// testScorePass runs scorePassWith(kern) on n random rows of the given
// kind and checks it against the definition.
func testScorePass(t *testing.T, rng *rand.Rand, n int, kind string, shift uint, kern scoreFunc) {
	key, ins, del := passInput(rng, n, kind, shift)
	want := slices.Clone(key)
	wantBest, wantSum := int64(math.MinInt64), int64(0)
	for c := range want {
		want[c] += (int64(ins[c]) - int64(del[c])) << shift
		if want[c] > keyLive {
			wantSum += int64(ins[c])
		}
		wantBest = max(wantBest, want[c])
	}
	best, sum := scorePassWith(kern, key, ins, del, shift)
	if best != wantBest || sum != wantSum {
		t.Fatalf("best %d, sum %d; want %d, %d", best, sum, wantBest, wantSum)
	}
	if !slices.Equal(key, want) {
		t.Fatal("keys differ from the definition")
	}
}

// TestKeyShift checks the rank bits of the keys: enough for every rank,
// within the bounds that keep held rows' and gone rows' keys apart (see
// keyShift), and unshifted keys beyond them.
func TestKeyShift(t *testing.T) {
	for _, tt := range []struct {
		k, b   int
		shift  uint
		packed bool
	}{
		{1, 1, 1, true}, {2, 1, 1, true}, {3, 1, 2, true}, {7, 20, 5, true},
		{2048, 256, 11, true}, {2049, 256, 12, true}, {8192, 512, 13, true},
		{65536, 256, 16, true}, {1 << 17, 64, 17, true}, {1<<17 + 1, 64, 0, false},
		{64, 1 << 18, 0, false}, {1 << 27, 1 << 10, 0, false},
	} {
		shift, packed := keyShift(tt.k, tt.b)
		if shift != tt.shift || packed != tt.packed {
			t.Errorf("keyShift(%d, %d) = %d, %v; want %d, %v", tt.k, tt.b, shift, packed, tt.shift, tt.packed)
		}
		if packed && (int64(1)<<shift < int64(max(tt.k, tt.b)) || 25+bitLen(max(tt.k, tt.b))+int(shift) > 60) {
			t.Errorf("keyShift(%d, %d) = %d: ranks or bounds do not fit", tt.k, tt.b, shift)
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
	key, ins, del := passInput(rng, n, "gone", 11)
	for c := range ins {
		ins[c], del[c] = int32(rng.IntN(1<<21)-1<<20), int32(rng.IntN(1<<21)-1<<20)
	}
	var goNs float64
	for _, v := range scoreVariants() {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				scorePassWith(v.kern, key, ins, del, 11)
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
