package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
)

// resumeChecksRun trains a 4-step dmoco run with a 32-row memory and a
// metrics.jsonl line per step, and returns a function that copies it.
func resumeChecksRun(t *testing.T) func() string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCLI("train", "--preset", "tiny", "--method", "dmoco", "--steps", "4", "--batch", "16",
		"--memory-size", "32", "--knn-every", "0", "--log-every", "1", "--out", src)
	if code != 0 {
		t.Fatalf("training: exit %d: %s", code, stderr)
	}
	return func() string {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
}

// TestResumeAndLoadRefuseInconsistentRuns: the audit's two runs. Line 2 of
// metrics.jsonl replaced with garbage: --resume refuses it, naming the
// file, the line, what it found and what it expected (a torn last line is
// still dropped). config.json's memory_size edited from 32 to 64: --resume,
// eval, analyze and embed refuse the checkpoint's 32-row memory.
func TestResumeAndLoadRefuseInconsistentRuns(t *testing.T) {
	copyRun := resumeChecksRun(t)
	edit := func(t *testing.T, path string, f func(string) string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(f(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	garbage := func(s string) string {
		lines := strings.SplitAfter(s, "\n")
		lines[1] = "garbage\n"
		return strings.Join(lines, "")
	}
	memorySize64 := func(s string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		if m["memory_size"] != 32.0 {
			t.Fatalf("config.json memory_size %v, want 32", m["memory_size"])
		}
		m["memory_size"] = 64
		b, _ := json.Marshal(m)
		return string(b)
	}
	memoryWant := []string{"checkpoint/memory.bin holds a memory of 32 rows", "config.json says memory_size 64", "expected them to agree", "put back memory_size 32"}
	for _, tc := range []struct {
		name string
		file string
		edit func(string) string
		args []string // with --run or --out DIR appended
		want []string
	}{
		{"metrics garbage", train.MetricsFile, garbage, []string{"train", "--resume", "--steps", "6", "--out"},
			[]string{"metrics.jsonl:2: found \"garbage\"", `expected a JSON object with a numeric "step"`}},
		{"resume memory_size", train.ConfigFile, memorySize64, []string{"train", "--resume", "--steps", "6", "--out"}, memoryWant},
		{"eval memory_size", train.ConfigFile, memorySize64, []string{"eval", "--protocol", "knn", "--limit", "20", "--run"}, memoryWant},
		{"analyze memory_size", train.ConfigFile, memorySize64, []string{"analyze", "--tsne-points", "20", "--run"}, memoryWant},
		{"embed memory_size", train.ConfigFile, memorySize64, []string{"embed", "--input", "in.npy", "--out", "out.npy", "--run"}, memoryWant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRun()
			path := filepath.Join(dir, tc.file)
			edit(t, path, tc.edit)
			before, _ := os.ReadFile(path)
			args := append(tc.args, dir)
			for i, a := range args {
				if strings.HasSuffix(a, ".npy") {
					args[i] = filepath.Join(t.TempDir(), a)
				}
			}
			wantCLIError(t, args, append(tc.want, path)...)
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("%s changed by the refused command", tc.file)
			}
		})
	}

	// A torn last line (a kill -9 while logging) is dropped, and the run
	// goes on to log every step once.
	dir := copyRun()
	edit(t, filepath.Join(dir, train.MetricsFile), func(s string) string { return s + `{"step":5,"lo` })
	if code, _, stderr := runCLI("train", "--resume", "--steps", "6", "--out", dir); code != 0 {
		t.Fatalf("resume after a torn last line: exit %d: %s", code, stderr)
	}
	ms, err := train.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if m.Step != i+1 || len(ms) != 6 {
			t.Fatalf("steps of metrics.jsonl: %+v, want 1..6", ms)
		}
	}
}

// TestResumeFinishedRun resumes a run that has done all its steps: it
// trains nothing, says so rather than printing a speed of 0 img/s, its
// JSON reports no steps trained, and its config.json is left as it was
// (the kNN settings and the precision given to that call computed
// nothing); resuming it with more steps trains only those.
func TestResumeFinishedRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := runCLI("train", "--preset", "tiny", "--steps", "2", "--out", dir); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	config := filepath.Join(dir, train.ConfigFile)
	before, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		steps, trained int
		want           string
	}{
		{2, 0, "2 steps, all trained before (--resume --steps N continues it to N)"},
		{3, 1, "3 steps, loss "},
	} {
		code, stdout, stderr := runCLI("train", "--resume", "--out", dir, "--steps", strconv.Itoa(tc.steps), "--knn-k", "3", "--precision", "bf16", "--json")
		if code != 0 {
			t.Fatalf("resume to %d steps: exit %d: %s", tc.steps, code, stderr)
		}
		var res train.Result
		if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil {
			t.Fatalf("resume to %d steps: %v in %q", tc.steps, err, stdout)
		}
		if !strings.Contains(stdout, tc.want) || res.Steps != tc.steps || res.Trained != tc.trained || (res.ImgPerS > 0) != (tc.trained > 0) {
			t.Errorf("resume to %d steps: %+v, stdout %q; want %q and %d trained", tc.steps, res, stdout, tc.want, tc.trained)
		}
		after, _ := os.ReadFile(config)
		if changed := string(after) != string(before); changed != (tc.trained > 0) {
			t.Errorf("resume to %d steps: config.json changed %v, want %v", tc.steps, changed, tc.trained > 0)
		}
	}
}
