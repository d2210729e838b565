package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/wisdom"
)

// lastObject decodes the last line of out as a JSON object.
func lastObject(t *testing.T, out string) map[string]any {
	t.Helper()
	var res map[string]any
	lastJSON(t, out, &res)
	return res
}

// TestBenchGemmJSON checks the fields of duelctl bench gemm --json,
// CONTRACT.md's and the CPU and tuning ones.
func TestBenchGemmJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"duelctl", "bench", "gemm", "--m", "40", "--n", "30", "--k", "20", "--seconds", "0.01", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	res := lastObject(t, out.String())
	for _, k := range []string{"gflops", "gflops_best", "threads"} {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v", k, res[k])
		}
	}
	for _, k := range []string{"isa", "cpu_key"} {
		if v, ok := res[k].(string); !ok || v == "" {
			t.Errorf("%s = %v", k, res[k])
		}
	}
	if _, ok := res["cpu"].(string); !ok {
		t.Errorf("cpu = %v", res["cpu"])
	}
	tu, ok := res["tuning"].(map[string]any)
	if !ok {
		t.Fatalf("tuning = %v", res["tuning"])
	}
	if s := tu["source"]; s != "derived" && s != "tuned" {
		t.Errorf("tuning source = %v", s)
	}
	for _, k := range []string{"mc", "kc", "nc", "ns"} {
		if v, ok := tu[k].(float64); !ok || v <= 0 {
			t.Errorf("tuning.%s = %v", k, tu[k])
		}
	}
}

// TestBenchGemmErrors: every refusal is one line naming the flag, before
// anything is allocated or timed.
func TestBenchGemmErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--m", "0"}, "-m: got 0, expected a positive integer"},
		{[]string{"--seconds", "0"}, "--seconds: got 0, expected a positive number"},
		{[]string{"--seconds", "NaN"}, "--seconds: got NaN"},
		// Bounded: --seconds 1e300 would time the first variant for ever.
		{[]string{"--seconds", "1e300"}, "--seconds: got 1e+300, expected a positive number of at most 3600"},
		{[]string{"--seconds", "+Inf"}, "--seconds: got +Inf"},
	} {
		wantCLIError(t, append([]string{"bench", "gemm", "--m", "8", "--n", "8", "--k", "8"}, tc.args...), tc.want)
	}
}

// TestBenchTune runs the quick tuner into a temporary wisdom file and
// checks what it reports and stores; with DUEL_WISDOM=off it stores
// nothing. A corrupt file is replaced with a warning.
func TestBenchTune(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tuner (seconds)")
	}
	path := filepath.Join(t.TempDir(), "wisdom.json")
	if err := os.WriteFile(path, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(wisdom.Env, path)
	var out, errb bytes.Buffer
	if code := run([]string{"duelctl", "bench", "tune", "--quick", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "replaced an unusable wisdom file") {
		t.Errorf("no warning about the corrupt file: %q", errb.String())
	}
	wantBenchMachine(t, "bench tune", out.String(), "")
	wantTuneLabels(t, out.String())
	res := lastObject(t, out.String())
	if res["wisdom"] != path || res["stored"] != true {
		t.Errorf("wisdom = %v, stored = %v", res["wisdom"], res["stored"])
	}
	kept, ok := res["kept"].(map[string]any)
	if !ok || kept["source"] != "tuned" || kept["kernel"] == "" {
		t.Errorf("kept = %v", res["kept"])
	}
	f, err := wisdom.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := res["cpu_key"].(string)
	var e map[string]any
	if ok, err := f.Lookup(key, "gemm.sgemm", &e); !ok || err != nil || e["kernel"] != kept["kernel"] || e["kc"] != kept["kc"] {
		t.Errorf("stored entry %v (%v, %v), kept %v", e, ok, err, kept)
	}

	t.Setenv(wisdom.Env, "off")
	out.Reset()
	errb.Reset()
	if code := run([]string{"duelctl", "bench", "tune", "--quick", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if res := lastObject(t, out.String()); res["stored"] != false {
		t.Errorf("DUEL_WISDOM=off: stored = %v", res["stored"])
	}
}

// wantTuneLabels checks that bench tune's text says its ranking figure is
// measured by CPU time: a header names the unit of the candidates' lines,
// and the derived and kept lines give it as CPU-time GFLOP/s beside the
// wall-clock figure.
func wantTuneLabels(t *testing.T, stdout string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	header := -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "each candidate's fastest call, in CPU-time GFLOP/s (GFLOP per CPU-second x threads"):
			header = i
		case strings.HasPrefix(l, "derived: ") || strings.HasPrefix(l, "kept:    "):
			if !regexp.MustCompile(`[0-9] CPU-time GFLOP/s \([0-9.]+ (GFLOP/s )?by the clock\)`).MatchString(l) {
				t.Errorf("line %q: want the CPU-time figure labelled so, beside the clock's", l)
			}
		case strings.HasSuffix(l, " GFLOP/s") && (header < 0 || header > i):
			t.Errorf("candidate line %q comes before the header naming its unit", l)
		}
	}
	if header < 0 {
		t.Errorf("no header naming the candidates' unit (CPU-time GFLOP/s):\n%s", stdout)
	}
}

// TestBenchTuneHelp: the help says the figure is measured by CPU time, and
// why.
func TestBenchTuneHelp(t *testing.T) {
	code, stdout, stderr := runCLI("bench", "tune", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"ranked by CPU time, not wall time", "GFLOP per CPU-second times the threads", "wall_gflops"} {
		if !strings.Contains(strings.Join(strings.Fields(stdout), " "), want) {
			t.Errorf("bench tune --help does not say %q:\n%s", want, stdout)
		}
	}
}
