package cudaduel

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/cudatest"
)

// openRounds returns an opener of Memory on g running duel_select_rounds
// with the given block size and, when capC > 0, that many candidates a
// round (a small cap ends rounds early: the check's undo runs often).
func openRounds(g cuda.GPU, block, capC int) func(k, z int, adm memory.Admission) (*Memory, error) {
	return openRoundsKernel(g, block, capC, SelectRounds, "duel_select_rounds")
}

// openRoundsKernel is openRounds for either rounds kernel (sel, its name
// ran), capC its candidates a round or a block.
func openRoundsKernel(g cuda.GPU, block, capC int, sel Selection, ran string) func(k, z int, adm memory.Admission) (*Memory, error) {
	open := openSelect(g, block, sel, nil, ran)
	return func(k, z int, adm memory.Admission) (*Memory, error) {
		m, err := open(k, z, adm)
		if err == nil {
			m.rcap = capC
			h100OptIn(m)
		}
		return m, err
	}
}

// h100OptIn gives a memory running duel_select_rounds or
// duel_select_rounds8 on a GPU without an opt-in (the emulator, which has
// no limit) an H100's 227 KiB, so that its rounds take 128 candidates as
// on a GPU.
func h100OptIn(m *Memory) {
	if _, ok := m.g.(cuda.SharedMemoryOptIn); !ok {
		if m.rshared > 0 {
			m.rshared = 227 << 10
		}
		if m.r8shared > 0 {
			m.r8shared = 227 << 10
		}
	}
}

// openRounds8 is openRounds for duel_select_rounds8 (capQ: candidates a
// block, 16 when 0).
func openRounds8(g cuda.GPU, block, capQ int) func(k, z int, adm memory.Admission) (*Memory, error) {
	return openRoundsKernel(g, block, capQ, SelectRounds8, "duel_select_rounds8")
}

// TestDUELRounds8Emulated runs duel_select_rounds8 (duel_rounds8.cu on
// the CPU emulator, its eight blocks together) through Memory against
// memory.DUEL and, bit for bit (evicted, the slot state, the scores),
// against duel_select_shared: single updates, resident streams and twin
// streams with 16, 2 and 1 candidates a block (rounds that end at their
// first steps), blocks without slots (K+B < 8), K < B, B = 1 and ties.
func TestDUELRounds8Emulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	const rk = "duel_select_rounds8"
	small := []duelCase{{1, 1, 1}, {1, 3, 2}, {2, 0, 3}, {3, 5, 4}, {5, 2, 7}, {7, 7, 1}, {16, 4, 8}, {33, 9, 5}, {40, 64, 3}}
	stream(t, "rounds8", small, updateSelect(e, 128, SelectRounds8, rk)) // 48 KiB less a margin: 4 candidates a block
	residentStream(t, "resident-rounds8", residentCases, openRounds8(e, 128, 0))
	residentStream(t, "resident-rounds8-cap1", []duelCase{{33, 9, 5}, {40, 64, 3}}, openRounds8(e, 256, 1))
	for _, capQ := range []int{0, 2} {
		twinSelect(t, fmt.Sprintf("twin8-cap%d", capQ), e, roundsCases, 128, SelectRounds8, rk, capQ)
	}
	roundsTies(t, "ties8", e, SelectRounds8, rk, 128, 9, []tieCase{{5, 3, 4, 1, 0}, {70, 30, 5, 1, 0}, {70, 30, 5, 3, 2}, {33, 90, 2, 2, 1}})
}

// roundsCases are the shapes of the rounds tests beyond the small ones:
// batches past one round (64 steps) and past a check group (8), in
// memories smaller and larger than the candidates' cap.
var roundsCases = []duelCase{{100, 37, 12}, {150, 70, 6}, {60, 130, 4}, {300, 150, 9}}

// TestDUELRoundsEmulated runs duel_select_rounds (duel_rounds.cu on the
// CPU emulator) through Memory against memory.DUEL and, bit for bit
// (evicted, the slot state, the scores), against duel_select_shared:
// single updates and resident streams at several block sizes, with the
// candidates' cap at 128, 64 and small values (4, 1: rounds that end at
// the first steps, their undo), K < B, B = 1 and ties.
func TestDUELRoundsEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	const rk = "duel_select_rounds"
	small := []duelCase{{1, 1, 1}, {1, 3, 2}, {2, 0, 3}, {3, 5, 4}, {5, 2, 7}, {7, 7, 1}, {16, 4, 8}, {33, 9, 5}, {40, 64, 3}}
	stream(t, "rounds32", small, updateSelect(e, 32, SelectRounds, rk)) // 48 KiB less a margin: 32 candidates
	stream(t, "rounds64", roundsCases[:1], updateSelect(e, 64, SelectRounds, rk))
	residentStream(t, "resident-rounds32", residentCases, openRounds(e, 32, 0))
	residentStream(t, "resident-rounds128-cap4", []duelCase{{100, 37, 12}, {60, 130, 4}}, openRounds(e, 128, 4))
	residentStream(t, "resident-rounds64-cap1", []duelCase{{33, 9, 5}, {40, 64, 3}}, openRounds(e, 64, 1))
	for _, capC := range []int{0, 64, 7, 2} {
		twinSelect(t, fmt.Sprintf("twin-cap%d", capC), e, roundsCases, 96, SelectRounds, rk, capC)
	}
	twinSelect(t, "twin-small", e, small, 32, SelectRounds, rk, 3)

	// Ties: copies of one or a few rows, the positions decide.
	roundsTies(t, "ties", e, SelectRounds, rk, 64, 7, []tieCase{{5, 3, 4, 1, 0}, {70, 30, 5, 1, 0}, {70, 30, 5, 3, 2}, {33, 90, 2, 2, 5}})
}

// tieCase is a memory of k rows of length z and batches of b drawn from g
// distinct rows, with capC candidates a round (a block for rounds8; 0:
// the default).
type tieCase struct{ k, b, z, g, capC int }

// roundsTies runs tieSteps on g with selection sel (kernel rk, blocks of
// block threads) for every case and admission (seed: the streams').
func roundsTies(t *testing.T, name string, g cuda.GPU, sel Selection, rk string, block int, seed uint64, cases []tieCase) {
	for _, c := range cases {
		for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
			name := fmt.Sprintf("%s/K%d_B%d_G%d_cap%d_%v", name, c.k, c.b, c.g, c.capC, adm)
			r := rand.New(rand.NewPCG(uint64(c.k)+seed, uint64(c.g)))
			m, err := NewMemory(g, c.k, c.z, MemoryOptions{Admission: adm, BlockSize: block, Batch: c.b, Selection: sel})
			if err != nil {
				t.Fatal(err)
			}
			m.rcap = c.capC
			h100OptIn(m)
			tieSteps(t, name, m, r, c.k, c.b, c.z, c.g, 3, adm, rk)
			m.Close()
		}
	}
}

// TestRoundsLayout checks duel_select_rounds' shared memory (K 4096, B
// 256: 161.9 KiB with 128 candidates, within an H100's 227 KiB),
// roundsCap's choice and SelectRounds' name (TestSelectionKernel: which
// kernel it runs).
func TestRoundsLayout(t *testing.T) {
	if got := roundsShared(4096, 256, 128); got != 8*4352+4*4096+8*(192+64)+4*(2*192+64)+4*(128*128+64*128+64*64) || got > 227<<10 {
		t.Errorf("roundsShared(4096, 256, 128) = %d", got)
	}
	for _, tc := range []struct{ k, b, shared, want int }{
		{4096, 256, 227 << 10, 128}, {4096, 256, roundsShared(4096, 256, 128) - 1, 64}, {4096, 256, roundsShared(4096, 256, 64) - 1, 32}, {4096, 256, roundsShared(4096, 256, 32) - 1, 0},
		{16, 4, 0, 0}, {16, 4, defaultShared, 32}, {12000, 4, 227 << 10, 64}, {4096, 256, defaultShared, 0},
	} {
		if got := roundsCap(tc.k, tc.b, tc.shared); got != tc.want {
			t.Errorf("roundsCap(%d, %d, %d) = %d, want %d", tc.k, tc.b, tc.shared, got, tc.want)
		}
	}
	if Selection(SelectRounds).String() != "rounds" || SelectRounds8.String() != "rounds8" {
		t.Errorf("SelectRounds.String() = %q, SelectRounds8.String() = %q", SelectRounds.String(), SelectRounds8.String())
	}
	// duel_select_rounds8: each block's keys, the round's state for 8 x
	// capQ candidates, the pushed ints, the warp maxima, the statistics.
	if got := rounds8Shared(4096, 256, 16); got != 8*544+roundsStateBytes(128)+80+256+80 || got > 227<<10 {
		t.Errorf("rounds8Shared(4096, 256, 16) = %d", got)
	}
	for _, tc := range []struct{ k, b, shared, want int }{
		{4096, 256, 227 << 10, 16}, {4096, 256, rounds8Shared(4096, 256, 16) - 1, 8}, {4096, 256, rounds8Shared(4096, 256, 4) - 1, 0},
		{16, 4, 0, 0}, {300, 150, defaultShared, 4},
	} {
		if got := rounds8Cap(tc.k, tc.b, tc.shared); got != tc.want {
			t.Errorf("rounds8Cap(%d, %d, %d) = %d, want %d", tc.k, tc.b, tc.shared, got, tc.want)
		}
	}
}

// TestRoundsTaken checks, on the CPU emulator, that duel_select_rounds
// batches steps and logs how many rounds an update takes: between
// ceil(B/64) and B, well below B on rows of 128 values (random, a quarter
// of each batch copies of rows held; at most 40 rounds for 128 steps
// here, where the CPU model of BenchmarkCertifiedRounds gives 7 for 256
// at K 4096), exactly B with one candidate a round in Protected mode
// (every round ends after its one candidate's eviction), and anywhere in
// between on 9 values, whose scores move by as much in a step as they
// spread (a correct but slow case: 31-49 rounds for 150 steps).
func TestRoundsTaken(t *testing.T) {
	e := cudatest.NewEmulator(t)
	for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
		for _, tc := range []struct {
			k, b, z, capC, most int
			eight               bool // duel_select_rounds8 (capC a block)
		}{{512, 128, 128, 0, 40, false}, {300, 150, 9, 0, 150, false}, {300, 150, 9, 1, 150, false}, {60, 130, 4, 0, 130, false},
			{512, 128, 128, 0, 40, true}, {300, 150, 9, 0, 150, true}} {
			r := rand.New(rand.NewPCG(uint64(tc.k), uint64(adm)))
			open := openRounds(e, 128, tc.capC)
			if tc.eight {
				open = openRounds8(e, 128, tc.capC)
			}
			m, err := open(tc.k, tc.z, adm)
			if err != nil {
				t.Fatal(err)
			}
			mem := unitRows(r, tc.k, tc.z, nil)
			if err := m.Load(mem, nil); err != nil {
				t.Fatal(err)
			}
			least := (tc.b + roundsSteps - 1) / roundsSteps
			if tc.capC == 1 && adm == memory.Protected {
				least = tc.b
			}
			var counts []int
			for range 3 {
				batch := unitRows(r, tc.b, tc.z, mem)
				res, err := m.Update(batch)
				if err != nil {
					t.Fatal(err)
				}
				st, err := m.roundStats()
				if err != nil {
					t.Fatal(err)
				}
				n := int(st.rounds)
				if st.replayed < int64(tc.b) || st.probes < st.rounds || min(st.candidates, st.gather, st.replay, st.check) <= 0 ||
					st.total < st.candidates+st.gather+st.replay+st.check {
					t.Errorf("%v K %d B %d Z %d cap %d: statistics %+v: want at least B steps replayed, a probe a round, every phase timed within the total", adm, tc.k, tc.b, tc.z, tc.capC, st)
				}
				if n < least || n > tc.most {
					t.Errorf("%v K %d B %d Z %d cap %d: %d rounds, want %d..%d", adm, tc.k, tc.b, tc.z, tc.capC, n, least, tc.most)
				}
				counts = append(counts, n)
				mem = keptRows(mem, batch, res.Kept, tc.k, tc.z)
			}
			t.Logf("%s %v K %d B %d Z %d cap %d: rounds %v", m.ran, adm, tc.k, tc.b, tc.z, tc.capC, counts)
			m.Close()
		}
	}
}

// BenchmarkRoundsSteadyEmulated counts duel_select_rounds' rounds (one
// block of 1024, 128 candidates) on the CPU emulator at
// BenchmarkDUELKernel's shape, K 4096, B 256, Z 128, Protected: random
// unit rows loaded, then five updates with fresh random batches, as
// rounds-u1 ... rounds-u5. The count is the data's, so the emulator
// gives what a GPU gives (BenchmarkDUELKernel's rounds1024fresh). Slow
// (about 30 s on a Zen 5): run it alone, e.g. `go test -run '^$' -bench
// RoundsSteadyEmulated -benchtime 1x ./duel/memory/cudaduel`.
func BenchmarkRoundsSteadyEmulated(b *testing.B) {
	e := cudatest.NewEmulator(b)
	for b.Loop() {
		r := rand.New(rand.NewPCG(1, 2))
		m, err := openRounds(e, 1024, 0)(4096, 128, memory.Protected)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Load(unitRows(r, 4096, 128, nil), nil); err != nil {
			b.Fatal(err)
		}
		for i := range 5 {
			if _, err := m.Update(unitRows(r, 256, 128, nil)); err != nil {
				b.Fatal(err)
			}
			st, err := m.roundStats()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.rounds), fmt.Sprintf("rounds-u%d", i+1))
		}
		m.Close()
	}
}
