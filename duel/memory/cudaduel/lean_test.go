package cudaduel

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// The lean kernels' results are defined as duel_select_shared's (the
// emulator checks them against it): on cudatest.Host they run the same
// Go transcription, after the launch checks a GPU would make.
func init() {
	for _, l := range leanKernels {
		hostKernels[l.name] = func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
			k, b := int(a.Int32(2)), int(a.Int32(3))
			switch {
			case cfg.Block.X != l.nt || cfg.Grid.X != 1:
				return fmt.Errorf("%s launched with %v blocks of %v threads, expected one of %d", l.name, cfg.Grid, cfg.Block, l.nt)
			case k+b > l.nt*l.slots:
				return fmt.Errorf("%s launched for K %d + B %d, more than its %d threads' %d slots", l.name, k, b, l.nt, l.slots)
			case cfg.Shared < leanShared(k, b, l.nt):
				return fmt.Errorf("%s launched with %d bytes of shared memory, needs %d", l.name, cfg.Shared, leanShared(k, b, l.nt))
			case len(h.I32(a.Ptr(0))) < (k+b-1)*int(a.Int64(1))+k+b+l.nt:
				return fmt.Errorf("%s's sim holds %d values: its threads read up to a block past K+B in the last row", l.name, len(h.I32(a.Ptr(0))))
			}
			return selectOnHost(h, a, 0, 7)
		}
	}
}

// TestLeanFor checks which lean kernel a memory runs for K+B slots and a
// block size, and the shared memory it needs (K 4096, B 256: 49 KiB,
// within an A100's 163 KiB opt-in).
func TestLeanFor(t *testing.T) {
	for _, tc := range []struct {
		k, b, block int
		want        string
		ok          bool
	}{
		{100, 28, 128, "duel_select_lean128", true}, {2000, 48, 128, "duel_select_lean128", true}, {2000, 49, 128, "duel_select_lean128", false},
		{4096, 256, 0, "duel_select_lean512", true}, {4096, 256, 1024, "duel_select_lean1024", true}, {4096, 256, 96, "duel_select_lean512", true},
		{8000, 192, 512, "duel_select_lean512", true}, {8000, 193, 1024, "duel_select_lean1024", false}, {1, 0, 0, "duel_select_lean512", true},
	} {
		l, ok := leanFor(tc.k, tc.b, tc.block)
		if l.name != tc.want || ok != tc.ok {
			t.Errorf("leanFor(K %d, B %d, block %d) = %s, %v; want %s, %v", tc.k, tc.b, tc.block, l.name, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct{ k, b, nt, want int }{
		{4096, 256, 512, 8*4352 + 4*4096},  // the keys cover the staging (4 x 512 x 9)
		{4096, 256, 1024, 8*4352 + 4*4096}, // and (4 x 1024 x 5)
		{3, 2, 1024, 4*1024 + 4*3},         // the staging covers the keys
	} {
		if got := leanShared(tc.k, tc.b, tc.nt); got != tc.want {
			t.Errorf("leanShared(%d, %d, %d) = %d, want %d", tc.k, tc.b, tc.nt, got, tc.want)
		}
	}
	if n := leanShared(4096, 256, 512); n > 163<<10-staticShared {
		t.Errorf("a lean kernel needs %d bytes at K 4096, B 256: more than an A100's opt-in", n)
	}
}

// TestDUELLeanEmulated runs duel_lean.cu's kernels (on the CPU emulator)
// through Memory against memory.DUEL and, bit for bit (evicted, the slot
// state, the scores), against duel_select_shared: single updates,
// resident streams (batches of varying size, the capacity growing) and
// twin streams, with 1 to 9 slots a thread (K+B from 2 to 1140 at 128
// threads; 512 and 1024 threads), K < B, B = 1 and ties.
func TestDUELLeanEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	small := []duelCase{{1, 1, 1}, {1, 3, 2}, {2, 0, 3}, {3, 5, 4}, {5, 2, 7}, {7, 7, 1}, {16, 4, 8}, {33, 9, 5}, {40, 64, 3}}
	stream(t, "lean128", small, updateSelect(e, 128, SelectLean, "duel_select_lean128"))
	stream(t, "lean128-slots", []duelCase{{100, 37, 12}, {300, 150, 9}, {1100, 40, 2}}, updateSelect(e, 128, SelectLean, "duel_select_lean128"))
	stream(t, "lean512", []duelCase{{129, 31, 33}, {600, 100, 7}}, updateSelect(e, 512, SelectLean, "duel_select_lean512"))
	stream(t, "lean1024", []duelCase{{1100, 40, 3}}, updateSelect(e, 1024, SelectLean, "duel_select_lean1024"))
	residentStream(t, "resident-lean128", residentCases, openSelect(e, 128, SelectLean, nil, "duel_select_lean128"))
	residentStream(t, "resident-lean128-slots", []duelCase{{300, 150, 9}, {60, 130, 4}}, openSelect(e, 128, SelectLean, nil, "duel_select_lean128"))
	residentStream(t, "resident-lean128-prefetch", []duelCase{{33, 9, 5}, {300, 150, 9}}, openPrefetch(openSelect(e, 128, SelectLean, nil, "duel_select_lean128")))
	twinSelect(t, "twin-lean128", e, append(small, roundsCases...), 128, SelectLean, "duel_select_lean128", 0)
	twinSelect(t, "twin-lean512", e, []duelCase{{600, 100, 7}}, 512, SelectLean, "duel_select_lean512", 0)
	roundsTies(t, "ties-lean", e, SelectLean, "duel_select_lean128", 128, 11, []tieCase{{5, 3, 4, 1, 0}, {70, 30, 5, 1, 0}, {70, 30, 5, 3, 0}, {233, 90, 2, 2, 0}})
}

// TestDUELLeanFakeDevice runs, on the fake driver only with
// DUEL_CUDADUEL_SELECT=lean (TestFakeDriver's children), Update and
// resident streams against memory.DUEL with SelectAuto: at compute
// capability 8.0 the lean kernels run (their module loads, their shared
// memory opts in), at 7.0 the driver refuses the module and every update
// runs duel_select_shared, the reason kept.
func TestDUELLeanFakeDevice(t *testing.T) {
	d, want := fakeSelectStreams(t, "lean", "duel_select_lean128", 128, 128)
	if d.Capability() >= 80 {
		want = "duel_select_lean512"
	}
	fakeBigUpdate(t, d, 4, want, func(m *Memory) error {
		if need := leanShared(4096, 256, leanAutoBlock); m.lshared < need {
			return fmt.Errorf("the lean kernels may use %d bytes of dynamic shared memory, need %d at K 4096, B 256 (the opt-in failed?)", m.lshared, need)
		}
		return nil
	}, func(m *Memory) error { return m.leanErr })
}

// TestLeanStatsEmulated checks that a lean kernel with leanTimed reports
// its parts (on the emulator clock64 counts its calls: every part
// positive, the steps the batch's) and that the decisions do not change.
func TestLeanStatsEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	for _, timed := range []bool{false, true} {
		policy := memory.NewDUEL(memory.Protected)
		open := openSelect(e, 128, SelectLean, nil, "duel_select_lean128")
		m, err := open(150, 6, memory.Protected)
		if err != nil {
			t.Fatal(err)
		}
		m.leanTimed = timed
		r := rand.New(rand.NewPCG(7, 7))
		mem := unitRows(r, 150, 6, nil)
		if err := m.Load(mem, nil); err != nil {
			t.Fatal(err)
		}
		updateLikeDUEL(t, fmt.Sprintf("timed %v", timed), m, policy, mem, unitRows(r, 40, 6, mem))
		if timed {
			st, err := m.leanStats()
			if err != nil {
				t.Fatal(err)
			}
			if st.steps != 40 || st.prologue <= 0 || st.wait <= 0 || st.update <= 0 || st.reduce <= 0 || st.total <= 0 {
				t.Errorf("lean stats %+v: want 40 steps and every part positive", st)
			}
		}
		m.Close()
	}
}
