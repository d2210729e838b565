package cudaduel

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/cudatest"
)

// TestFakeDriver runs the GPU path of this package without a GPU: in a
// child process whose driver library is the fake libcuda of
// internal/cudatest (device memory in host memory, a stream's work deferred
// until something waits for it, duel.cu on the CPU emulator), the policy
// (alone and managing a memory.Memory) and memory run on a *cuda.Device
// through the driver bindings: the shared-memory opt-in, the frees after
// waiting, the events of the timing.
func TestFakeDriver(t *testing.T) {
	cudatest.FakeDriver(t) // built once, before the children that use it
	// The children are independent processes: they run in parallel, as
	// many at once as go test's -parallel (GOMAXPROCS) allows.
	t.Run("sm80", func(t *testing.T) {
		t.Parallel()
		run := "^(TestDUELPolicyKernel|TestDUELPolicyInMemoryKernel|TestDUELFakeDevice)$"
		out, err := cudatest.RunOnFakeDriver(t, run)
		if err != nil {
			t.Fatalf("%s with the fake driver: %v\n%s", run, err, out)
		}
		for _, w := range []string{"--- PASS: TestDUELPolicyKernel", "--- PASS: TestDUELPolicyInMemoryKernel", "--- PASS: TestDUELFakeDevice"} {
			if !strings.Contains(out, w) || strings.Contains(out, "--- SKIP") {
				t.Errorf("with the fake driver: output lacks %q or skips:\n%s", w, out)
			}
		}
	})
	// A device of compute capability 9.0, duel_select_cluster asked for.
	t.Run("sm90-cluster", func(t *testing.T) {
		t.Parallel()
		run := "^(TestDUELPolicyKernel|TestDUELClusterFakeDevice)$"
		out, err := cudatest.RunOnFakeDriver(t, run, "DUEL_FAKE_CUDA_CC=90", EnvSelect+"=cluster")
		if err != nil {
			t.Fatalf("%s with the fake driver at compute capability 9.0: %v\n%s", run, err, out)
		}
		for _, w := range []string{"--- PASS: TestDUELPolicyKernel", "--- PASS: TestDUELClusterFakeDevice"} {
			if !strings.Contains(out, w) || strings.Contains(out, "--- SKIP") {
				t.Errorf("with the fake driver at compute capability 9.0: output lacks %q or skips:\n%s", w, out)
			}
		}
	})
	// duel_select_rounds asked for, at compute capability 8.0 (it runs)
	// and 7.0 (its sm_80 module does not load: the one-block kernels).
	for _, cc := range []string{"80", "70"} {
		t.Run("sm"+cc+"-rounds", func(t *testing.T) {
			t.Parallel()
			run := "^(TestDUELPolicyKernel|TestDUELRoundsFakeDevice)$"
			out, err := cudatest.RunOnFakeDriver(t, run, "DUEL_FAKE_CUDA_CC="+cc, EnvSelect+"=rounds")
			if err != nil {
				t.Fatalf("%s with the fake driver at compute capability %s: %v\n%s", run, cc, err, out)
			}
			for _, w := range []string{"--- PASS: TestDUELPolicyKernel", "--- PASS: TestDUELRoundsFakeDevice"} {
				if !strings.Contains(out, w) || strings.Contains(out, "--- SKIP") {
					t.Errorf("with the fake driver at compute capability %s: output lacks %q or skips:\n%s", cc, w, out)
				}
			}
		})
	}
	// The lean kernels asked for, at compute capability 8.0 (they run)
	// and 7.0 (their sm_80 module does not load: the one-block kernels);
	// duel_select_rounds8 at 9.0 (it runs) and 8.0 (its sm_90 module does
	// not load).
	fakeChildren(t, "TestDUELLeanFakeDevice", "lean", "80", "70")
	fakeChildren(t, "TestDUELRounds8FakeDevice", "rounds8", "90", "80")
}

// fakeChildren runs test alone in a child process on the fake driver for
// each compute capability ccs, with DUEL_CUDADUEL_SELECT=sel, and wants
// it to pass there: a parallel subtest of t for each.
func fakeChildren(t *testing.T, test, sel string, ccs ...string) {
	t.Helper()
	for _, cc := range ccs {
		t.Run("sm"+cc+"-"+sel, func(t *testing.T) {
			t.Parallel()
			run := "^" + test + "$"
			out, err := cudatest.RunOnFakeDriver(t, run, "DUEL_FAKE_CUDA_CC="+cc, EnvSelect+"="+sel)
			if err != nil {
				t.Fatalf("%s with the fake driver at compute capability %s: %v\n%s", run, cc, err, out)
			}
			if w := "--- PASS: " + test; !strings.Contains(out, w) || strings.Contains(out, "--- SKIP") {
				t.Errorf("with the fake driver at compute capability %s: output lacks %q or skips:\n%s", cc, w, out)
			}
		})
	}
}

// TestDUELRounds8FakeDevice runs, on the fake driver only with
// DUEL_CUDADUEL_SELECT=rounds8 (TestFakeDriver's last children), Update
// and resident streams against memory.DUEL with SelectAuto: at compute
// capability 9.0 duel_select_rounds8 runs (its module loads, its shared
// memory opts in: 16 candidates a block at K 4096, B 256, the driver
// launches one cluster), below it the driver refuses the module and
// every update runs duel_select_shared, the reason kept.
func TestDUELRounds8FakeDevice(t *testing.T) {
	if !cudatest.InFakeChild() || os.Getenv(EnvSelect) != "rounds8" {
		t.Skip("runs in TestFakeDriver's child processes, with the fake driver and " + EnvSelect + "=rounds8")
	}
	d := needGPU(t)
	want := "duel_select_rounds8"
	if d.Capability() < clusterCapability {
		want = "duel_select_shared"
	}
	cases := []duelCase{{3, 5, 4}, {16, 4, 8}, {150, 70, 6}}
	stream(t, "fake-rounds8", cases, updateSelect(d, 128, SelectAuto, want))
	residentStream(t, "fake-resident-rounds8", cases, openSelect(d, 256, SelectAuto, nil, want))
	m, err := NewMemory(d, 4096, bigZ, MemoryOptions{Batch: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := rounds8Cap(4096, 256, m.r8shared); d.Capability() >= clusterCapability && got != 16 {
		t.Errorf("duel_select_rounds8 may use %d bytes of dynamic shared memory: %d candidates a block at K 4096, B 256, want 16 (the opt-in failed?)", m.r8shared, got)
	}
	r := rand.New(rand.NewPCG(5, 5))
	if err := m.Load(unitRows(r, 4096, bigZ, nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(unitRows(r, 3, bigZ, nil)); err != nil {
		t.Fatal(err)
	}
	if m.ran != want || (want == "duel_select_shared") != (m.rounds8Err != nil) {
		t.Errorf("compute capability %d: ran %s (rounds8 error %v), want %s", d.Capability(), m.ran, m.rounds8Err, want)
	}
}

// TestDUELRoundsFakeDevice runs, on the fake driver only with
// DUEL_CUDADUEL_SELECT=rounds (TestFakeDriver's last children), Update
// and resident streams against memory.DUEL with SelectAuto: at compute
// capability 8.0 duel_select_rounds runs (its module loads, its shared
// memory opts in: 64 candidates a round at K 4096, B 256 in an A100's 163
// KiB), below it the driver refuses the module and every update runs
// duel_select_shared, the reason kept.
func TestDUELRoundsFakeDevice(t *testing.T) {
	d, want := fakeSelectStreams(t, "rounds", "duel_select_rounds", 64, 96)
	fakeBigUpdate(t, d, 3, want, func(m *Memory) error {
		if got := roundsCap(4096, 256, m.rshared); got != 64 {
			return fmt.Errorf("duel_select_rounds may use %d bytes of dynamic shared memory: %d candidates at K 4096, B 256, want 64 (the opt-in failed?)", m.rshared, got)
		}
		return nil
	}, func(m *Memory) error { return m.roundsErr })
}

// fakeSelectStreams skips unless in TestFakeDriver's child processes with
// DUEL_CUDADUEL_SELECT=sel; there it runs Update (blocks of block
// threads) and resident streams (residentBlock) against memory.DUEL with
// SelectAuto, whose updates must run kernel from compute capability 8.0
// and duel_select_shared below, and returns the device and that kernel.
func fakeSelectStreams(t *testing.T, sel, kernel string, block, residentBlock int) (*cuda.Device, string) {
	t.Helper()
	if !cudatest.InFakeChild() || os.Getenv(EnvSelect) != sel {
		t.Skip("runs in TestFakeDriver's child processes, with the fake driver and " + EnvSelect + "=" + sel)
	}
	d := needGPU(t)
	if d.Capability() < 80 {
		kernel = "duel_select_shared"
	}
	cases := []duelCase{{3, 5, 4}, {16, 4, 8}, {150, 70, 6}}
	stream(t, "fake-"+sel, cases, updateSelect(d, block, SelectAuto, kernel))
	residentStream(t, "fake-resident-"+sel, cases, openSelect(d, residentBlock, SelectAuto, nil, kernel))
	return d, kernel
}

// bigZ is the row length of the fake device's memories of K 4096 rows
// (fakeBigUpdate, TestDUELRounds8FakeDevice). The dynamic shared memory
// of duel_select_shared, duel_select_rounds, duel_select_rounds8 and the
// lean kernels, hence their opt-in and the kernel an update runs, depends
// on K and B only (sizes.go, lean.go), so short rows take the same paths
// as BenchmarkDUELKernel's 128, while loading the memory (its K x K dots,
// Z deep, on the emulator) costs a sixteenth. The dots' longer rows run
// in backToBack (Z 128) and the emulated tests; duel_select_cluster,
// whose shared memory grows with Z, keeps Z 128 and 2048
// (TestDUELClusterFakeDevice).
const bigZ = 8

// fakeBigUpdate checks, on the fake device d, a memory of K 4096 rows of
// bigZ (16 rows below compute capability 8.0: within the default 48 KiB,
// the launch is tried and refused): from 8.0 that optIn finds its selection's
// shared memory opted in, and that an update of rows batch rows runs
// want, with no reason(m) kept when want is not duel_select_shared.
func fakeBigUpdate(t *testing.T, d *cuda.Device, rows int, want string, optIn func(m *Memory) error, reason func(m *Memory) error) {
	t.Helper()
	k := 4096
	if d.Capability() < 80 {
		k = 16
	}
	m, err := NewMemory(d, k, bigZ, MemoryOptions{Batch: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if d.Capability() >= 80 {
		if err := optIn(m); err != nil {
			t.Error(err)
		}
	}
	r := rand.New(rand.NewPCG(5, uint64(rows)))
	if err := m.Load(unitRows(r, k, bigZ, nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(unitRows(r, rows, bigZ, nil)); err != nil {
		t.Fatal(err)
	}
	if m.ran != want || (want == "duel_select_shared") != (reason(m) != nil) {
		t.Errorf("compute capability %d: ran %s (refusal %v), want %s", d.Capability(), m.ran, reason(m), want)
	}
}

// TestDUELClusterFakeDevice runs, on the fake driver at compute

// TestDUELClusterFakeDevice runs, on the fake driver at compute
// capability 9.0 only (TestFakeDriver's second child), Update and resident
// streams against memory.DUEL with the selection SelectAuto under
// DUEL_CUDADUEL_SELECT=cluster, which must be duel_select_cluster (its
// module loads, its shared memory opts in, the driver launches one
// cluster), and with the one-block kernels forced.
func TestDUELClusterFakeDevice(t *testing.T) {
	if !cudatest.InFakeChild() || os.Getenv("DUEL_FAKE_CUDA_CC") != "90" || os.Getenv(EnvSelect) != "cluster" {
		t.Skip("runs in TestFakeDriver's child process, with the fake driver at compute capability 9.0 and " + EnvSelect + "=cluster")
	}
	d := needGPU(t)
	if d.Capability() != 90 {
		t.Fatalf("%v: compute capability %d, want 90", d, d.Capability())
	}
	small := []duelCase{{1, 3, 2}, {3, 5, 4}, {16, 4, 8}, {40, 64, 3}}
	stream(t, "fake-cluster", small, updateSelect(d, 0, SelectAuto, "duel_select_cluster"))
	residentStream(t, "fake-resident-cluster64", small, openSelect(d, 64, SelectAuto, nil, "duel_select_cluster"))
	residentStream(t, "fake-resident-block64", small, openSelect(d, 64, SelectBlock, nil, "duel_select_shared"))
	residentStream(t, "fake-resident-block64-prefetch", small, openPrefetch(openSelect(d, 64, SelectBlock, nil, "duel_select_shared")))
	m, err := NewMemory(d, 4096, 128, MemoryOptions{Batch: 256})
	if err != nil {
		t.Fatal(err)
	}
	if need := clusterShared(4096, 256, 128); m.cshared < need {
		t.Errorf("duel_select_cluster may use %d bytes of dynamic shared memory, needs %d at K 4096, B 256, Z 128: the opt-in failed", m.cshared, need)
	}
	m.Close()
	// The largest batch whose blocks fit the fake H100's 227 KiB (less
	// staticShared) at K 250, Z 2048: 62 rows (39 slots a block, 227248
	// bytes) run duel_select_cluster, 63 (40 slots) the one-block kernel.
	for _, tc := range []struct {
		b    int
		want string
	}{{62, "duel_select_cluster"}, {63, "duel_select_shared"}} {
		const k, z = 250, 2048
		r := rand.New(rand.NewPCG(uint64(tc.b), 7))
		mem, batch := unitRows(r, k, z, nil), unitRows(r, tc.b, z, nil)
		want, err := memory.NewDUEL(memory.Compete).Evict(&memory.Arrival{Memory: mem, Batch: batch, Z: z})
		if err != nil {
			t.Fatal(err)
		}
		update := updateSelect(d, 0, SelectAuto, tc.want)
		got, err := update(mem, batch, z, Options{Admission: memory.Compete})
		if err != nil {
			t.Fatalf("K %d B %d Z %d: %v", k, tc.b, z, err)
		}
		if !slices.Equal(got.Evicted, want) {
			t.Errorf("K %d B %d Z %d: %s evicted %v, memory.DUEL evicts %v", k, tc.b, z, tc.want, got.Evicted, want)
		}
	}
}

// TestDUELFakeDevice runs, on the fake driver only, Update and resident
// streams on the device (the selection in shared memory after the opt-in,
// and in global memory; MoveGather; MoveAuto) against memory.DUEL, and the benchmarks' timing
// by events.
func TestDUELFakeDevice(t *testing.T) {
	if !cudatest.InFakeChild() {
		t.Skip("runs in TestFakeDriver's child process, with the fake driver")
	}
	d := needGPU(t)
	small := []duelCase{{1, 3, 2}, {3, 5, 4}, {16, 4, 8}, {40, 64, 3}}
	stream(t, "fake64", small, func(mem, batch []float32, z int, opt Options) (Result, error) {
		opt.BlockSize = 64
		return Update(d, mem, batch, z, opt)
	})
	residentStream(t, "fake-resident32", small, openResident(d, 32, false))
	residentStream(t, "fake-resident64-global", small, openResident(d, 64, true))
	residentStream(t, "fake-resident32-gather", small, openGather(d, 32, false))
	// MoveAuto timed by the device's events.
	ma, _ := moveAutoStream(t, d, nil)
	if mt := ma.MoveTune(); !mt.Decided || mt.Scatter <= 0 || mt.Gather <= 0 || ma.Move() != mt.Move {
		t.Errorf("MoveAuto on the fake device: %+v, Move %v", mt, ma.Move())
	}
	ma.Close()
	m, err := NewMemory(d, 6000, 8, MemoryOptions{Batch: 200})
	if err != nil {
		t.Fatal(err)
	}
	if m.shared < selectShared(6000, 200) {
		t.Errorf("dynamic shared memory limited to %d bytes: the opt-in beyond 48 KiB failed", m.shared)
	}
	m.Close()

	r := rand.New(rand.NewPCG(3, 4))
	if m, err = NewMemory(d, 16, 8, MemoryOptions{Batch: 4}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Load(unitRows(r, 16, 8, nil), nil); err != nil {
		t.Fatal(err)
	}
	m.timing = &duelTiming{}
	if _, err := m.Update(unitRows(r, 4, 8, nil)); err != nil {
		t.Fatal(err)
	}
	for i, p := range []time.Duration{m.timing.upload, m.timing.dots, m.timing.selection, m.timing.permute, m.timing.download} {
		if p <= 0 {
			t.Errorf("phase %d timed %v by events, want a positive time", i, p)
		}
	}
	backToBack(t, d)
}

// backToBack runs updates one after the other with nothing that waits
// for the device between them but their own copies of the evictions:
// each returns before its duel_move has run (the fake driver defers the
// stream's work until a wait), and the next batch's copy, over the
// staging line (cuda.Device's inlineMax: 160 x 128 floats, 80 KiB), goes
// through the pinned staging buffers, which the fake driver reads when the
// stream reaches the copy. The decisions are memory.DUEL's, and the
// scores after the last update those of the rows held. The updates are
// enough for SelectAuto's measurement (autotune.go) to decide, the
// selections timed by the device's events.
func backToBack(t *testing.T, d cuda.GPU) {
	t.Helper()
	const k, b, z = 64, 160, 128
	r := rand.New(rand.NewPCG(5, 6))
	m, err := NewMemory(d, k, z, MemoryOptions{Batch: b})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mem := unitRows(r, k, z, nil)
	if err := m.Load(mem, nil); err != nil {
		t.Fatal(err)
	}
	policy := memory.NewDUEL(memory.Protected)
	for step := range 2 + 3*tuneSamples + 1 {
		mem = updateLikeDUEL(t, fmt.Sprintf("back-to-back update %d", step), m, policy, mem, unitRows(r, b, z, mem))
	}
	scores, err := m.Scores()
	if err != nil {
		t.Fatal(err)
	}
	if fresh := duelHost(mem, nil, z, Options{}); !slices.Equal(scores, fresh.Scores) {
		t.Errorf("back-to-back: scores after the last update %v, recomputed %v", scores, fresh.Scores)
	}
	a := m.AutoTune()
	t.Logf("back-to-back on %v: %+v, the last update ran %s", d, a, m.SelectionKernel())
	if !a.Decided || a.LeanOff != nil || a.Lean <= 0 || a.Block <= 0 || m.SelectionKernel() != a.Kernel {
		t.Errorf("back-to-back: AutoTune = %+v after the updates (the last ran %s), want both kernels timed and the faster running", a, m.SelectionKernel())
	}
}
