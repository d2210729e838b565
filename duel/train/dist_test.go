package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// trainRanks runs Train on n in-process ranks (dist.NewLocal) in dir and
// returns each rank's error; a failing rank aborts the group, as the MPI
// launcher does.
func trainRanks(t *testing.T, n int, c *Config, dir string, edit func(*Options)) []error {
	t.Helper()
	comms := dist.NewLocal(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := tinyOptions(dir)
			o.Comm = comms[r]
			if edit != nil {
				edit(&o)
			}
			_, errs[r] = Train(context.Background(), c, o)
			if errs[r] != nil {
				comms[r].Abort(1)
			}
		}()
	}
	wg.Wait()
	return errs
}

// readMemory decodes the memory of a run's checkpoint.
func readMemory(t *testing.T, dir string) *memory.Memory {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, CheckpointDir, memoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var m memory.Memory
	if err := m.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return &m
}

// dataParallelCase is a run of TestDataParallelMatchesOneProcess: a
// method, with MoCo's key shuffle or with synchronised BatchNorm.
type dataParallelCase struct {
	method        string
	shuffle, sync bool
}

// dataParallelCases are TestDataParallelMatchesOneProcess's runs: every
// registered method at least once (TestDataParallelCoversEveryMethod).
var dataParallelCases = []dataParallelCase{
	{"dmoco", true, false},
	{"moco", true, false},
	{"dmoco", false, false},
	{"simclr", false, false},
	{"dsimclr", false, false},
	{"simclr", false, true},
	{"byol", false, true},
	{"barlow", false, true},
	{"dmoco", false, true},
}

// TestDataParallelCoversEveryMethod fails for a registered method that
// TestDataParallelMatchesOneProcess does not run: a method added to
// duel/ssl without its data-parallel case.
func TestDataParallelCoversEveryMethod(t *testing.T) {
	for _, name := range ssl.Names() {
		if !slices.ContainsFunc(dataParallelCases, func(c dataParallelCase) bool { return c.method == name }) {
			t.Errorf("method %s has no case in dataParallelCases: add it (sync true if it has BatchNorm in its heads; docs/ssl-method.md)", name)
		}
	}
}

// TestDataParallelMatchesOneProcess trains the same configuration on one
// process and on 2 ranks (global batch 16, 8 per rank) and compares: the
// first step's losses (the same parameters, the same function) must agree
// up to float summation order, the later ones and the saved models must
// stay close, and the memory must hold the same sample ids. Ghost
// BatchNorm with 2 groups makes each rank's BatchNorm exactly one of the
// single process's groups (dist's strided shards), so the runs compute the
// same function.
//
// Summation order is all that differs, but training amplifies it: a ReLU
// or max-pooling decision that flips on a 1e-7 difference moves one
// weight by as much as 2e-3 in a single step. Over seeds 1-12 on an AVX2
// and an AVX-512 machine (AMD EPYC Zen 5, DUEL_ISA=avx2 and avx512) the
// first step's losses agreed within 2.3e-6 (relative), the six steps'
// within 1.7e-3, the encoders within 4.3e-4 (the norm of their
// difference over the norm of the one-process model), and the memories
// always held the same ids; a learning rate 1.5 times too large, the
// smallest error these bounds are meant to catch, moves the encoder by
// 5.3e-3 to 7.0e-3.
func TestDataParallelMatchesOneProcess(t *testing.T) {
	for _, tc := range dataParallelCases {
		name := tc.method
		if tc.shuffle {
			name += "/shuffle-bn"
		}
		if tc.sync {
			name += "/sync-bn"
		}
		t.Run(name, func(t *testing.T) {
			c := tinyConfig(t, tc.method)
			c.Steps, c.KNNEvery, c.BNSplits, c.ShuffleBN, c.LogEvery = 6, 0, 2, tc.shuffle, 1
			if tc.method == "dsimclr" {
				c.MemNegatives = 8
			}
			one, two := t.TempDir(), t.TempDir()
			// With --sync-bn every BatchNorm (heads included) normalises
			// the global batch: the single process uses one group.
			single, multi := *c, *c
			if tc.sync {
				single.BNSplits, multi.BNSplits, multi.SyncBN = 1, 1, true
			}
			if _, err := Train(context.Background(), &single, tinyOptions(one)); err != nil {
				t.Fatal(err)
			}
			for r, err := range trainRanks(t, 2, &multi, two, func(o *Options) { o.AgreeEvery = 1 }) {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			ma, err := ReadMetrics(one)
			if err != nil {
				t.Fatal(err)
			}
			mb, err := ReadMetrics(two)
			if err != nil {
				t.Fatal(err)
			}
			if len(ma) != len(mb) || len(ma) != c.Steps {
				t.Fatalf("%d vs %d metric lines, expected %d", len(ma), len(mb), c.Steps)
			}
			worst, first := 0.0, 0.0
			for i := range ma {
				d := math.Abs(ma[i].Loss-mb[i].Loss) / math.Max(1, math.Abs(ma[i].Loss))
				worst = max(worst, d)
				if i == 0 {
					first = d
				}
				if mb[i].WorldSize != 2 || ma[i].WorldSize != 0 {
					t.Errorf("step %d: world sizes %d and %d, expected 0 (absent) and 2", ma[i].Step, ma[i].WorldSize, mb[i].WorldSize)
				}
			}
			t.Logf("relative loss difference at the first step: %.3g, over %d steps: %.3g", first, len(ma), worst)
			if first > 2e-5 || worst > 5e-3 {
				t.Errorf("losses differ by %.3g at the first step and up to %.3g (relative; at most 2e-5 and 5e-3): one process %v, two ranks %v",
					first, worst, losses(ma), losses(mb))
			}
			if info, _ := ssl.Lookup(c.Method); info.Memory {
				a, b := readMemory(t, one), readMemory(t, two)
				if !slices.Equal(a.IDs(), b.IDs()) {
					t.Errorf("memory sample ids differ:\none process %v\ntwo ranks   %v", a.IDs(), b.IDs())
				}
			}
			ra, err := LoadRun(one)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := LoadRun(two)
			if err != nil {
				t.Fatal(err)
			}
			var diff2, norm2 float64
			sb := nn.StateDictOf(rb.Encoder)
			for _, e := range nn.StateDictOf(ra.Encoder) {
				o, ok := sb.Get(e.Name)
				if !ok {
					t.Fatalf("%s missing from the 2-rank model", e.Name)
				}
				x, y := e.Tensor.Contiguous().Data(), o.Contiguous().Data()
				for i := range x {
					diff2 += float64(x[i]-y[i]) * float64(x[i]-y[i])
					norm2 += float64(x[i]) * float64(x[i])
				}
			}
			rel := math.Sqrt(diff2 / norm2)
			t.Logf("encoder difference (relative norm): %.3g", rel)
			if rel > 2e-3 {
				t.Errorf("the encoders differ by %.3g (the norm of their difference over the one-process model's; at most 2e-3)", rel)
			}
		})
	}
}

func losses(ms []Metric) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = m.Loss
	}
	return out
}

// TestDataParallelEveryMethod trains the methods with BatchNorm in their
// heads on 2 ranks without synchronised BatchNorm (each rank normalises
// its shard in the heads: not the single process's function): the ranks
// must stay identical (compared every step) and write one run directory.
func TestDataParallelEveryMethod(t *testing.T) {
	for _, name := range []string{"byol", "barlow"} {
		t.Run(name, func(t *testing.T) {
			c := tinyConfig(t, name)
			c.Steps, c.KNNEvery = 3, 3
			dir := t.TempDir()
			for r, err := range trainRanks(t, 2, c, dir, func(o *Options) { o.AgreeEvery = 1 }) {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			ms, err := ReadMetrics(dir)
			if err != nil || len(ms) == 0 || ms[len(ms)-1].KNNTop1 == nil {
				t.Fatalf("metrics %+v, %v: expected lines with a final kNN accuracy", ms, err)
			}
		})
	}
}

// TestDataParallelRefusals: a global batch that does not shard, ghost
// BatchNorm groups that do not divide among the ranks, and ranks started
// with different flags are refused on every rank before training.
func TestDataParallelRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		edit func(*Config)
		want string
	}{
		{"batch", 3, func(c *Config) { c.Batch = 16 }, "--batch"},
		{"bn-splits", 4, func(c *Config) { c.BNSplits = 2 }, "--bn-splits"},
		{"sync-bn-with-splits", 2, func(c *Config) { c.BNSplits, c.SyncBN = 2, true }, "--bn-splits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(t, "dmoco")
			tc.edit(c)
			for r, err := range trainRanks(t, tc.n, c, t.TempDir(), nil) {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("rank %d: error %v, expected one naming %s", r, err, tc.want)
				}
			}
		})
	}
	t.Run("different-flags", func(t *testing.T) {
		comms := dist.NewLocal(2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for r := range comms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := tinyConfig(t, "dmoco")
				c.Seed = uint64(r) // rank 1 was started with another --seed
				o := tinyOptions(t.TempDir())
				o.Comm = comms[r]
				_, errs[r] = Train(context.Background(), c, o)
			}()
		}
		wg.Wait()
		for r, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "configuration") {
				t.Errorf("rank %d: error %v, expected the ranks' configurations to differ", r, err)
			}
		}
	})
}

// TestDataParallelInterrupt: a cancellation seen by one rank stops every
// rank at the same step, and rank 0's checkpoint resumes on a different
// number of ranks to the same memory as an uninterrupted run.
func TestDataParallelInterrupt(t *testing.T) {
	c := tinyConfig(t, "dmoco")
	c.Steps, c.KNNEvery = 6, 0
	whole, cut := t.TempDir(), t.TempDir()
	if _, err := Train(context.Background(), c, tinyOptions(whole)); err != nil {
		t.Fatal(err)
	}
	comms := dist.NewLocal(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := tinyOptions(cut)
			o.Comm = comms[r]
			if r == 1 { // only rank 1 sees the interrupt
				o.AfterStep = func(step int) {
					if step == 3 {
						cancel()
					}
				}
			}
			_, errs[r] = Train(ctx, c, o)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("rank %d: %v, expected ErrInterrupted", r, err)
		}
	}
	st, err := readState(filepath.Join(cut, CheckpointDir))
	if err != nil || st.Step != 3 {
		t.Fatalf("checkpoint at step %d (%v), expected 3", st.Step, err)
	}
	// Resume on one process: the rest of the run is the single process's.
	o := tinyOptions(cut)
	o.Resume = true
	if _, err := Train(context.Background(), c, o); err != nil {
		t.Fatal(err)
	}
	a, b := readMemory(t, whole), readMemory(t, cut)
	if !slices.Equal(a.IDs(), b.IDs()) {
		t.Errorf("memory ids after resuming on one process differ from the uninterrupted run:\n%v\n%v", a.IDs(), b.IDs())
	}
}

// TestDataParallelOnDevice trains 2 ranks on the host-less test device,
// whose tensors have no host storage: gradients, gathered rows and
// BatchNorm statistics cross to the host for the collectives only through
// explicit copies, and the run directory is byte for byte that of 2 ranks
// on the CPU (the same kernels compute both).
func TestDataParallelOnDevice(t *testing.T) {
	for _, sync := range []bool{false, true} {
		c := tinyConfig(t, "dmoco")
		c.Steps, c.KNNEvery, c.BNSplits, c.ShuffleBN = 3, 3, 2, true
		if sync {
			c.BNSplits, c.ShuffleBN, c.SyncBN = 1, false, true
		}
		cpu, dev := t.TempDir(), t.TempDir()
		for r, err := range trainRanks(t, 2, c, cpu, nil) {
			if err != nil {
				t.Fatalf("CPU rank %d: %v", r, err)
			}
		}
		for r, err := range trainRanks(t, 2, c, dev, func(o *Options) { o.Device = hostless.FusedName }) {
			if err != nil {
				t.Fatalf("device rank %d: %v", r, err)
			}
		}
		sameRunFiles(t, cpu, dev)
	}
}

// TestBroadcastModel: after broadcastModel every rank holds rank 0's
// tensors, though each rank built its model from another seed.
func TestBroadcastModel(t *testing.T) {
	comms := dist.NewLocal(2)
	models := make([]ssl.Method, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range comms {
		c := tinyConfig(t, "dmoco")
		c.Seed = uint64(10 + r)
		m, err := NewMethod(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		models[r] = m
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = newGroup(comms[r], m, 0).broadcastModel(m)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for i, p := range models[0].Parts() {
		a, b := nn.StateDictOf(p.Module), nn.StateDictOf(models[1].Parts()[i].Module)
		for j := range a {
			if !slices.Equal(a[j].Tensor.Contiguous().Data(), b[j].Tensor.Contiguous().Data()) {
				t.Fatalf("%s: rank 1 does not hold rank 0's values", a[j].Name)
			}
		}
	}
}
