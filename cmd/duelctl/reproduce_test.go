package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReproduceSmoke runs the smoke preset as it is, end to end, on the
// embedded dataset: it must take seconds.
func TestReproduceSmoke(t *testing.T) {
	out := t.TempDir()
	start := time.Now()
	code, stdout, stderr := runCLI("reproduce", "--preset", "smoke", "--out", out, "--json")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("smoke preset: %v", took)
	if took > 2*time.Minute {
		t.Errorf("smoke preset took %v, want seconds", took)
	}
	var v struct {
		Out       string `json:"out"`
		ReportDir string `json:"report_dir"`
		Report    string `json:"report"`
		Runs      int    `json:"runs"`
		Cells     []struct {
			Method string  `json:"method"`
			Top1   float64 `json:"top1_mean"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(lastLine(stdout)), &v); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, stdout)
	}
	repDir := filepath.Join(out, "smoke")
	if v.Out != out || v.ReportDir != repDir || v.Runs != 2 || len(v.Cells) != 2 || v.Cells[0].Method != "moco" || v.Cells[1].Method != "dmoco" {
		t.Fatalf("result: %+v", v)
	}
	for _, f := range []string{"smoke/report.md", "smoke/results.json", "smoke/knn_top1.png", "runs/dmoco-rho0.75-seed0/probe.json", "runs/dmoco-rho0.75-seed0/model.safetensors"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	f, err := os.Open(filepath.Join(repDir, "knn_top1.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("knn_top1.png: %v", err)
	}
	md, err := os.ReadFile(v.Report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- command: `duelctl reproduce --preset smoke --out " + out + "`", "70.12 ± 1.40", "dmoco − moco"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// TestReproduceVariantsAndSet runs variants with --set into --report.
func TestReproduceVariantsAndSet(t *testing.T) {
	out := t.TempDir()
	report := filepath.Join(out, "docs", "f3")
	code, stdout, stderr := runCLI("reproduce", "--preset", "f3-cpu", "--out", out, "--report", report,
		"--methods", "simclr,dsimclr:negatives=memory,eps=0", "--seeds", "1",
		"--set", "dataset=default", "--set", "arch=resnet18-w4,batch=16,steps=1,knn-every=0,keep-checkpoints=false,memory-size=64,mem-negatives=16",
		"--probe-epochs", "1", "--probe-limit", "40", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "[2/2] dsimclr_negatives-memory_eps-0-rho0.75-seed0: linear top-1") {
		t.Errorf("stdout:\n%s", stdout)
	}
	md, err := os.ReadFile(filepath.Join(report, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- command: `duelctl reproduce --preset f3-cpu --out " + out + " --report " + report + " --seeds 1 --methods simclr,dsimclr:negatives=memory,eps=0 --set dataset=default --set arch=resnet18-w4",
		"--set `dataset=default arch=resnet18-w4 batch=16 steps=1",
		"| dsimclr:negatives=memory,eps=0 | memory | 0 | D-SimCLR (memory only, ε = 0) |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

func TestReproduceBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "table9", "--out", "x"}, "duelctl: --preset: unknown preset \"table9\""},
		{[]string{"--preset", "smoke", "--out", "x", "--rho", "0.5,high"}, "duelctl: --rho: got \"high\""},
		{[]string{"--preset", "smoke", "--out", "x", "--rho", "1.5"}, "duelctl: --rho: got 1.5"},
		{[]string{"--preset", "smoke", "--out", "x", "--seeds", "-2"}, "duelctl: --seeds: got -2, expected an integer >= 1, or 0 for the preset's"},
		{[]string{"--preset", "smoke", "--out", "x", "--seeds", "1000000000"}, "duelctl: --seeds: got 1000000000, expected an integer in [1, 1000], or 0 for the preset's"}, // was killed for memory
		{[]string{"--preset", "smoke", "--out", "x", "--methods", ""}, "duelctl: --methods: empty, expected at least one method"},                                           // ran the preset's methods
		{[]string{"--preset", "smoke", "--out", "x", "--rho", ""}, "duelctl: --rho: empty, expected at least one value in [0, 1]"},                                          // ran the preset's rho_max
		{[]string{"--preset", "smoke", "--out", "x", "--probe-epochs", "-1"}, "duelctl: --probe-epochs: got -1, expected an integer >= 1, or 0"},
		{[]string{"--preset", "smoke", "--out", "x", "--steps", "-2"}, "duelctl: --steps: got -2, expected an integer >= 0"},
		{[]string{"--preset", "smoke", "--out", "x", "--methods", "mocoo"}, "duelctl: --methods: variant \"mocoo\": --method: got \"mocoo\""},
		{[]string{"--preset", "smoke", "--out", "x", "--methods", "dmoco:refresh=3"}, "duelctl: --methods: variant \"dmoco:refresh=3\": unknown training flag --refresh"},
		{[]string{"--preset", "smoke", "--out", "x", "--methods", "dsimclr,eps=0"}, "duelctl: --methods: setting \"eps=0\" after method \"dsimclr\" without a colon"},
		{[]string{"--preset", "smoke", "--out", "x", "--set", "stepz=3"}, "duelctl: --set \"stepz=3\": unknown training flag --stepz"},
		{[]string{"--preset", "smoke", "--out", "x", "--set", "batch=1"}, "duelctl: run moco-rho0.75-seed0 ("},
		{[]string{"--preset", "smoke", "--out", "x", "--set", "rho-max=0.5"}, "duelctl: --set \"rho-max=0.5\": rho-max is set by the grid's rho_max values (--rho)"},
	} {
		code, _, stderr := runCLI(append([]string{"reproduce"}, tc.args...)...)
		if code == 0 || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line starting with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestReproduceGoesOnElsewhere checks the report's archive of its runs:
// copied into another OUT/runs, it makes the same command count them as
// finished, and --report-only writes a report from it without training.
func TestReproduceGoesOnElsewhere(t *testing.T) {
	first := t.TempDir()
	if code, _, stderr := runCLI("reproduce", "--preset", "smoke", "--out", first); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	archive := filepath.Join(first, "smoke", "runs")
	var made struct {
		Made struct {
			Commit, CPU, Date string
		} `json:"made"`
	}
	b, err := os.ReadFile(filepath.Join(archive, "dmoco-rho0.75-seed0", "probe.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &made); err != nil || made.Made.Commit == "" || made.Made.CPU == "" || made.Made.Date == "" {
		t.Errorf("archived probe.json: made %+v (%v)", made.Made, err)
	}

	empty := t.TempDir()
	code, stdout, stderr := runCLI("reproduce", "--preset", "smoke", "--out", empty, "--report-only", "--json")
	if code != 0 || !strings.Contains(stdout, "[2/2] dmoco-rho0.75-seed0: not run yet") {
		t.Fatalf("--report-only on an empty OUT: exit %d\n%s%s", code, stdout, stderr)
	}
	if last := lastLine(stdout); !strings.Contains(last, `"cells":[]`) {
		t.Errorf("--report-only on an empty OUT: --json %s, want empty cells as []", last)
	}
	if b, err := os.ReadFile(filepath.Join(empty, "smoke", "results.json")); err != nil || strings.Contains(string(b), "null") {
		t.Errorf("results.json with no run: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(empty, "runs", "moco-rho0.75-seed0")); err == nil {
		t.Error("--report-only created a run directory")
	}

	second := t.TempDir()
	if err := os.CopyFS(filepath.Join(second, "runs"), os.DirFS(archive)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--report-only"}, nil} {
		code, stdout, stderr := runCLI(append([]string{"reproduce", "--preset", "smoke", "--out", second}, args...)...)
		if code != 0 || strings.Count(stdout, "(saved earlier)") != 2 {
			t.Fatalf("%v on the archive: exit %d\n%s%s", args, code, stdout, stderr)
		}
		md, err := os.ReadFile(filepath.Join(second, "smoke", "report.md"))
		if err != nil || !strings.Contains(string(md), "- command: `duelctl reproduce --preset smoke --out "+second+"`") {
			t.Errorf("%v: report.md (%v):\n%s", args, err, md)
		}
	}
}

// TestReproducePrecision runs a tiny grid in bf16 beside its fp32 runs on
// one --out: the bf16 runs and report are apart (-bf16) and say their
// precision; tf32 is refused on the CPU.
func TestReproducePrecision(t *testing.T) {
	out := t.TempDir()
	args := []string{"reproduce", "--preset", "smoke", "--out", out, "--methods", "dmoco", "--steps", "2",
		"--probe-epochs", "1", "--probe-limit", "40", "--json"}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("fp32: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(append(args, "--precision", "bf16")...)
	if code != 0 {
		t.Fatalf("bf16: exit %d: %s", code, stderr)
	}
	var v struct {
		ReportDir     string `json:"report_dir"`
		Precision     string `json:"precision"`
		ConvPrecision string `json:"conv_precision"`
	}
	if err := json.Unmarshal([]byte(lastLine(stdout)), &v); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, stdout)
	}
	if v.ReportDir != filepath.Join(out, "smoke-bf16") || v.Precision != "bf16" || v.ConvPrecision != "bf16" {
		t.Errorf("bf16 result: %+v", v)
	}
	if !strings.Contains(stdout, "(products bf16, convolutions bf16)") || !strings.Contains(stdout, "dmoco-rho0.75-seed0-bf16: linear top-1") ||
		strings.Contains(stdout, "saved earlier") {
		t.Errorf("bf16 stdout: want its precision named and its run trained apart from fp32's:\n%s", stdout)
	}
	for _, f := range []string{"smoke/report.md", "runs/dmoco-rho0.75-seed0/probe.json", "smoke-bf16/report.md", "runs/dmoco-rho0.75-seed0-bf16/probe.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// The next command in the process computes in fp32 again.
	code, stdout, stderr = runCLI(args...)
	if code != 0 || !strings.Contains(stdout, "saved earlier") || strings.Contains(stdout, "bf16") {
		t.Errorf("fp32 again: exit %d, want the fp32 run reused:\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(append(args, "--precision", "tf32")...)
	if code == 0 || !strings.Contains(stderr, "--precision tf32") {
		t.Errorf("tf32 on the CPU: exit %d, stderr %s", code, stderr)
	}
}
