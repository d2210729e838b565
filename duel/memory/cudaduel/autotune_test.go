package cudaduel

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// TestAutoTuneOnHost runs SelectAuto's measurement on cudatest.Host (the
// kernels' Go transcriptions, timed by the wall clock) through a stream
// of updates checked against memory.DUEL: the first update runs the
// one-block kernel, the second the cross-check, the next ones take the
// lean kernel, the lean kernel with the prefetch and the one-block kernel
// in turn until each has tuneSamples, and then the fastest runs every
// update. A lean kernel whose outputs differ from the one-block kernel's
// (tuneCorrupt) or whose launch the driver refuses is never a candidate,
// the reason reported.
func TestAutoTuneOnHost(t *testing.T) {
	const k, b, z = 48, 8, 6
	const lean, block = "duel_select_lean512", "duel_select_shared"
	for _, tc := range []struct {
		name    string
		setup   func(h *cudatest.Host, m *Memory)
		wantOff string // in AutoTune's LeanOff ("": the lean kernel is a candidate)
	}{
		{"both", func(*cudatest.Host, *Memory) {}, ""},
		{"corrupt-evicted", func(_ *cudatest.Host, m *Memory) { m.tuneCorrupt = func(o *leanOutputs) { o.ev[b-1] ^= 1 } }, "evicted differs"},
		{"corrupt-scores", func(_ *cudatest.Host, m *Memory) {
			m.tuneCorrupt = func(o *leanOutputs) { o.scores[k/2] = -o.scores[k/2] }
		}, "scores differs"},
		{"refused", func(h *cudatest.Host, _ *Memory) {
			h.Register(lean, func(*cudatest.Host, kc.Config, cudatest.Args) error {
				return errors.New("CUDA_ERROR_NO_BINARY_FOR_GPU")
			})
		}, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost()
			m, err := NewMemory(h, k, z, MemoryOptions{Batch: b})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			tc.setup(h, m)
			r := rand.New(rand.NewPCG(8, 9))
			mem := unitRows(r, k, z, nil)
			if err := m.Load(mem, nil); err != nil {
				t.Fatal(err)
			}
			policy := memory.NewDUEL(memory.Protected)
			var ran []string
			for u := range 2 + 3*tuneSamples + 3 {
				mem = updateLikeDUEL(t, fmt.Sprintf("update %d", u), m, policy, mem, unitRows(r, b, z, mem))
				name := m.ran
				if name == lean && m.ranPf {
					name += "+prefetch"
				}
				ran = append(ran, name)
			}
			if ran[0] != block || ran[1] != block {
				t.Errorf("the first two updates ran %v, want %s (the second after the lean kernel's cross-check)", ran[:2], block)
			}
			a := m.AutoTune()
			if tc.wantOff != "" {
				if a.LeanOff == nil || !strings.Contains(a.LeanOff.Error(), tc.wantOff) || a.Decided {
					t.Errorf("AutoTune = %+v, want the lean kernel off for a reason with %q, nothing decided", a, tc.wantOff)
				}
				if slices.Contains(ran, lean) {
					t.Errorf("the updates ran %v: the lean kernel after it was turned off", ran)
				}
				return
			}
			if !a.Decided || a.LeanOff != nil || a.Lean <= 0 || a.Block <= 0 || a.LeanPrefetch <= 0 || (a.Kernel != lean && a.Kernel != block) || a.Prefetch && a.Kernel != lean {
				t.Fatalf("AutoTune = %+v, want the three timed and one chosen", a)
			}
			sampled := ran[2 : 2+3*tuneSamples]
			if count(sampled, lean) != tuneSamples || count(sampled, lean+"+prefetch") != tuneSamples || count(sampled, block) != tuneSamples {
				t.Errorf("the measured updates ran %v, want %d of each: %s with and without the prefetch, %s", sampled, tuneSamples, lean, block)
			}
			chosen := a.Kernel
			if a.Prefetch {
				chosen += "+prefetch"
			}
			for _, k := range ran[2+3*tuneSamples:] {
				if k != chosen {
					t.Errorf("after the decision (%s) the updates ran %v", chosen, ran[2+3*tuneSamples:])
					break
				}
			}
		})
	}
}

// TestAutoTuneChoice checks SelectAuto's decision among its three
// candidates on made-up times (selectClock: the lean kernel, with the
// prefetch, the one-block kernel), and that a memory whose options turn
// the prefetch on for every kernel measures two (the lean kernel then
// always with it).
func TestAutoTuneChoice(t *testing.T) {
	const k, b, z = 48, 8, 6
	ms := func(d ...time.Duration) map[leanTurn]time.Duration {
		return map[leanTurn]time.Duration{leanRun: d[0] * time.Millisecond, leanRunPrefetch: d[1] * time.Millisecond, leanNo: d[2] * time.Millisecond}
	}
	for _, tc := range []struct {
		name         string
		times        map[leanTurn]time.Duration
		prefetchOpt  bool
		lean, pf     bool // the decision: the lean kernel, with the prefetch
		wantPfMedian bool
	}{
		{"lean", ms(2, 3, 4), false, true, false, true},
		{"lean-prefetch", ms(3, 2, 4), false, true, true, true},
		{"block", ms(4, 3, 2), false, false, false, true},
		{"tie-block", ms(3, 3, 3), false, false, false, true}, // a tie keeps the one-block kernel, then the lean kernel without the prefetch
		{"tie-lean", ms(2, 2, 3), false, true, false, true},
		{"option-lean", ms(2, 1, 3), true, true, false, false}, // the options' prefetch: two candidates, the lean kernel's time is with it
		{"option-block", ms(3, 1, 2), true, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMemory(newHost(), k, z, MemoryOptions{Batch: b, Prefetch: tc.prefetchOpt})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			m.selectClock = func(turn leanTurn, _ time.Duration) time.Duration { return tc.times[turn] }
			r := rand.New(rand.NewPCG(4, 5))
			mem := unitRows(r, k, z, nil)
			if err := m.Load(mem, nil); err != nil {
				t.Fatal(err)
			}
			policy := memory.NewDUEL(memory.Protected)
			var pfRuns int
			for u := range 2 + 3*tuneSamples + 2 {
				mem = updateLikeDUEL(t, fmt.Sprintf("update %d", u), m, policy, mem, unitRows(r, b, z, mem))
				if m.ranPf {
					pfRuns++
				}
			}
			a := m.AutoTune()
			if !a.Decided || (a.Kernel == "duel_select_lean512") != tc.lean || a.Prefetch != tc.pf || (a.LeanPrefetch > 0) != tc.wantPfMedian {
				t.Errorf("AutoTune = %+v, want lean %v, prefetch %v (a median with the prefetch: %v)", a, tc.lean, tc.pf, tc.wantPfMedian)
			}
			if tc.prefetchOpt && pfRuns == 0 {
				t.Error("with MemoryOptions.Prefetch no lean kernel asked for the runners-up's rows")
			}
			if tc.name == "lean-prefetch" {
				lines := m.KernelChoices()
				want := "duel steps: duel_select_lean512 with the prefetch (medians: lean 3.000 ms, lean with the prefetch 2.000 ms, one-block 4.000 ms)"
				if len(lines) != 2 || lines[0] != want || !strings.HasPrefix(lines[1], "duel move: ") {
					t.Errorf("KernelChoices() = %q, want %q and the move", lines, want)
				}
			}
		})
	}
}

// count returns how many of s equal v.
func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestAutoTuneOneUpdate checks that a memory updated once (the one-shot
// Update's) measures nothing, and that a forced selection never does.
func TestAutoTuneOneUpdate(t *testing.T) {
	h := newHost()
	r := rand.New(rand.NewPCG(2, 3))
	for _, sel := range []Selection{SelectAuto, SelectBlock, SelectLean} {
		m, err := NewMemory(h, 20, 4, MemoryOptions{Batch: 4, Selection: sel})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Load(unitRows(r, 20, 4, nil), nil); err != nil {
			t.Fatal(err)
		}
		updates := 1
		if sel != SelectAuto {
			updates = 4
		}
		for range updates {
			if _, err := m.Update(unitRows(r, 4, 4, nil)); err != nil {
				t.Fatal(err)
			}
		}
		if a := m.AutoTune(); a != (AutoTune{}) || m.tune != nil {
			t.Errorf("%v after %d updates: AutoTune = %+v, want nothing measured", sel, updates, a)
		}
		m.Close()
	}
}

// TestMedian checks the samples' median (the lower middle of an even
// count) and that it leaves its argument in order.
func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{[]time.Duration{5}, 5},
		{[]time.Duration{3, 1, 2}, 2},
		{[]time.Duration{4, 1, 3, 2}, 2},
		{[]time.Duration{9, 9, 1, 9, 1}, 9},
	} {
		in := slices.Clone(tc.in)
		if got := median(in); got != tc.want || !slices.Equal(in, tc.in) {
			t.Errorf("median(%v) = %v (argument now %v), want %v", tc.in, got, in, tc.want)
		}
	}
}

// TestDUELAutoKernel runs SelectAuto's measurement on a GPU (skipped
// without one) at the benchmark's shapes, the updates checked against
// memory.DUEL: from compute capability 8.0 the lean kernel must pass the
// cross-check (a lean kernel that the GPU computes differently would
// otherwise only be turned off, silently), and the three candidates are
// timed. It logs the choice and the medians.
func TestDUELAutoKernel(t *testing.T) {
	d := needGPU(t)
	for _, c := range []duelCase{{4096, 256, 128}, {2048, 256, 256}, {300, 40, 17}} {
		t.Run(fmt.Sprintf("K%d_B%d_Z%d", c.k, c.b, c.z), func(t *testing.T) {
			m, err := NewMemory(d, c.k, c.z, MemoryOptions{Batch: c.b})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			r := rand.New(rand.NewPCG(uint64(c.k), 5))
			mem := unitRows(r, c.k, c.z, nil)
			if err := m.Load(mem, nil); err != nil {
				t.Fatal(err)
			}
			policy := memory.NewDUEL(memory.Protected)
			for u := range 2 + 3*tuneSamples + 1 {
				mem = updateLikeDUEL(t, fmt.Sprintf("update %d", u), m, policy, mem, unitRows(r, c.b, c.z, mem))
			}
			a := m.AutoTune()
			t.Logf("%v: SelectAuto runs %s, prefetch %v (median selection: lean %v, lean with the prefetch %v, one-block %v; lean off: %v)", d, a.Kernel, a.Prefetch, a.Lean, a.LeanPrefetch, a.Block, a.LeanOff)
			if d.Capability() >= 80 && (!a.Decided || a.LeanOff != nil) {
				t.Errorf("compute capability %d: AutoTune = %+v, want the lean kernel checked and both timed", d.Capability(), a)
			}
		})
	}
}
