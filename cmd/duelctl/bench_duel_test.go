package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/memory/cudaduel"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/cudatest"
)

func TestBenchDuel(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"duelctl", "bench", "duel", "--size", "64", "--batch", "16", "--dim", "8", "--updates", "3", "--reference-updates", "2", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	for _, k := range []string{"fast_ms", "fast_mean_ms", "reference_ms", "speedup"} {
		if v, ok := res[k].(float64); !ok || !(v > 0) {
			t.Errorf("%s = %v", k, res[k])
		}
	}
	if res["isa"] == "" || res["int16_kernel"] == "" {
		t.Errorf("isa %v, int16_kernel %v", res["isa"], res["int16_kernel"])
	}
}

func TestBenchDuelErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "0"}, "--size: got 0"},
		{[]string{"--batch", "-1"}, "--batch"},
		{[]string{"--dim", "0"}, "--dim"},
		{[]string{"--updates", "0"}, "--updates"},
		{[]string{"--reference-updates", "-2"}, "--reference-updates"},
		{[]string{"--device", "gpu"}, "--device"},
		{[]string{"--size", "64", "--batch", "8", "--dim", "8", "--updates", "100000000000"}, "--updates: got 100000000000, expected an integer in [1, 1000000]"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"duelctl", "bench", "duel"}, c.args...), &out, &errb)
		msg := errb.String()
		if code == 0 || !strings.HasPrefix(msg, "duelctl: ") || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q (want a one-line error containing %q)", c.args, code, msg, c.want)
		}
	}
}

// TestBenchDuelFakeCUDA runs TestBenchDuelCUDA in child processes whose
// CUDA driver is internal/cudatest's fake libcuda (an sm_80 device, its
// kernels emulated on the CPU): with the default selection and with
// DUEL_CUDADUEL_SELECT=rounds and DUEL_CUDADUEL_MOVE=gather, which
// cuda_kernel and cuda_move must name (auto: the 3 updates do not finish
// MoveAuto's measurement).
func TestBenchDuelFakeCUDA(t *testing.T) {
	for _, tc := range []struct{ env, want, move string }{
		{"", "duel_select_shared", "auto"}, {"rounds", "duel_select_rounds", "gather"},
	} {
		out, err := cudatest.RunOnFakeDriver(t, "^TestBenchDuelCUDA$", cudaduel.EnvSelect+"="+tc.env, "DUEL_BENCH_DUEL_KERNEL="+tc.want,
			cudaduel.EnvMove+"="+tc.move, "DUEL_BENCH_DUEL_MOVE="+tc.move)
		if err != nil || !strings.Contains(out, "--- PASS: TestBenchDuelCUDA") || strings.Contains(out, "--- SKIP") {
			t.Errorf("%s=%q %s=%s with the fake driver: %v\n%s", cudaduel.EnvSelect, tc.env, cudaduel.EnvMove, tc.move, err, out)
		}
	}
}

// TestBenchDuelCUDA runs bench duel --device cuda: without a usable GPU it
// must refuse in one line that says why and advises --device cpu; with one
// (or TestBenchDuelFakeCUDA's fake driver) it must report the GPU's
// figures, the selection kernel that ran ($DUEL_BENCH_DUEL_KERNEL when
// set) and the move ($DUEL_BENCH_DUEL_MOVE when set).
func TestBenchDuelCUDA(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"duelctl", "bench", "duel", "--size", "64", "--batch", "16", "--dim", "8", "--updates", "3",
		"--reference-updates", "0", "--device", "cuda", "--json"}, &out, &errb)
	if cuda.Available() != nil {
		msg := errb.String()
		if code == 0 || !strings.HasPrefix(msg, "duelctl: --device cuda: ") || !strings.Contains(msg, "use --device cpu") || strings.Count(msg, "\n") != 1 {
			t.Errorf("without a GPU: exit %d, stderr %q", code, msg)
		}
		return
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	d, err := cuda.Default()
	if err != nil {
		t.Fatal(err)
	}
	wantBenchMachine(t, "bench duel --device cuda", out.String(), d.String())
	for _, k := range []string{"fast_ms", "cuda_ms", "cuda_mean_ms", "cuda_update_ms", "cuda_update_device_ms", "cuda_speedup"} {
		if v, ok := res[k].(float64); !ok || !(v > 0) {
			t.Errorf("%s = %v", k, res[k])
		}
	}
	if k, ok := res["cuda_kernel"].(string); !ok || !strings.HasPrefix(k, "duel_select_") || os.Getenv("DUEL_BENCH_DUEL_KERNEL") != "" && k != os.Getenv("DUEL_BENCH_DUEL_KERNEL") {
		t.Errorf("cuda_kernel = %v, want %q", res["cuda_kernel"], os.Getenv("DUEL_BENCH_DUEL_KERNEL"))
	}
	if mv, ok := res["cuda_move"].(string); !ok || mv != "auto" && mv != "scatter" && mv != "gather" || os.Getenv("DUEL_BENCH_DUEL_MOVE") != "" && mv != os.Getenv("DUEL_BENCH_DUEL_MOVE") {
		t.Errorf("cuda_move = %v, want %q", res["cuda_move"], os.Getenv("DUEL_BENCH_DUEL_MOVE"))
	}
}

// TestBenchDuelMemory: a memory, a batch or a reference whose state
// exceeds the machine's memory is refused naming the flag, before anything
// is drawn.
func TestBenchDuelMemory(t *testing.T) {
	if train.MachineMemory() <= 0 {
		t.Skip("the machine's memory is unknown: the command would not refuse these")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "100000000", "--batch", "8", "--dim", "8", "--updates", "1", "--reference-updates", "0"}, "--size: got 100000000, needs about "},
		{[]string{"--size", "64", "--batch", "1000000000", "--dim", "8", "--updates", "1"}, "--batch: got 1000000000, needs about "},
		{[]string{"--size", "64", "--batch", "65536", "--dim", "65536", "--updates", "1000000"}, "--updates: got 1000000, needs about "},
		{[]string{"--size", "10000000", "--batch", "8", "--dim", "8", "--updates", "1"}, "--reference-updates 0 skips it"},
	} {
		wantCLIError(t, append([]string{"bench", "duel"}, tc.args...), tc.want, "this machine has ")
	}
}

// TestDuelNeeds: the estimate of bench duel's defaults is small, and the
// 10^8-row memory of the audit needs more than 24 GiB.
func TestDuelNeeds(t *testing.T) {
	sum := func(needs []train.MemoryNeed) float64 {
		s := 0.0
		for _, n := range needs {
			s += n.Bytes
		}
		return s
	}
	if s := sum(duelNeeds(2048, 256, 256, 50, 3)); s > 1<<30 {
		t.Errorf("defaults: %s, expected under 1 GiB", train.FormatBytes(s))
	}
	if s := sum(duelNeeds(100000000, 8, 8, 1, 0)); s < 24<<30 {
		t.Errorf("10^8 rows: %s, expected over 24 GiB", train.FormatBytes(s))
	}
	// The parts: the initial rows, the memory's rows and their metadata
	// (no spare copy), the batches, and the larger of the fast path's and
	// the reference's state, which run one after the other.
	for _, tc := range []struct{ k, b, z, n, nr int }{
		{2048, 256, 256, 50, 3}, {2048, 256, 256, 50, 0}, {100000, 256, 128, 10, 0}, {500, 4000, 16, 5, 1},
	} {
		k, b, z := float64(tc.k), float64(tc.b), float64(tc.z)
		state := memory.NewDUEL(memory.Protected).HostBytes(tc.k, tc.z, tc.b)
		if tc.nr > 0 {
			state = max(state, memory.NewDUELReference(memory.Protected).HostBytes(tc.k, tc.z, tc.b))
		}
		want := 4*k*z + k*(4*z+36) + 4*float64(tc.n+1)*b*z + state
		if got := sum(duelNeeds(tc.k, tc.b, tc.z, tc.n, tc.nr)); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%+v: %.0f bytes, expected %.0f", tc, got, want)
		}
	}
}
