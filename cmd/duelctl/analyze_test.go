package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/imagetest"
)

func TestAnalyze(t *testing.T) {
	for _, method := range []string{"dmoco", "byol"} {
		dir := evalTrainRun(t, method)
		code, stdout, stderr := evalRunCLI("analyze", "--run", dir, "--limit", "120", "--tsne-points", "80", "--tsne-iters", "300", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", method, code, stderr)
		}
		var res analyzeResult
		lastJSON(t, stdout, &res)
		if res.TestSamples != 120 || res.Layer != "projector" || len(res.Classes) != 10 ||
			res.IntraClassVariance == nil || math.IsNaN(*res.IntraClassVariance) || *res.InterClassSimilarity < -1 || *res.InterClassSimilarity > 1 {
			t.Errorf("%s: result %+v", method, res)
		}
		// the raw line must carry the memory fields, null without a memory
		last := stdout[strings.LastIndex(strings.TrimSpace(stdout), "\n")+1:]
		if !strings.Contains(last, `"memory_class_entropy":`) {
			t.Errorf("%s: no memory_class_entropy field: %s", method, last)
		}
		report, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"tsne_test.png", "training_curves.png"}
		switch method {
		case "dmoco":
			if res.MemoryClassEntropy == nil || len(res.MemoryClassCounts) != 10 || res.MemoryRows == 0 ||
				*res.MemoryClassEntropy < 0 || *res.MemoryClassEntropy > math.Log(10)+1e-9 {
				t.Errorf("dmoco: memory fields %+v", res)
			}
			want = append(want, "tsne_memory.png", "class_frequency.png", "memory_age.png", "memory_uses.png", "memory_classes.png")
			if a := res.MemoryAge; a == nil || a.AgeMax < a.AgeMean || a.AgeMean < 0 || a.UsesMax < a.UsesMean {
				t.Errorf("dmoco: memory age %+v", a)
			}
			// The ages are those of the training log at the run's step.
			if ms, err := train.ReadMetrics(dir); err != nil || len(ms) == 0 || ms[len(ms)-1].MemoryAgeMean == nil {
				t.Errorf("metrics.jsonl: %v, %d lines", err, len(ms))
			} else if a := res.MemoryAge; a == nil || a.AgeMean != *ms[len(ms)-1].MemoryAgeMean {
				got, want := res.MemoryAge, *ms[len(ms)-1].MemoryAgeMean
				t.Errorf("analyze's age_mean %v, metrics.jsonl's memory_age_mean %v at step %d", got, want, ms[len(ms)-1].Step)
			}
			if !strings.Contains(string(report), "Age of the rows held") {
				t.Errorf("dmoco report lacks the memory age:\n%s", report)
			}
			r, err := train.LoadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			if h := r.Memory.ClassEntropy(); math.Abs(h-*res.MemoryClassEntropy) > 1e-12 {
				t.Errorf("memory class entropy %v, the memory's own %v", *res.MemoryClassEntropy, h)
			}
			if !strings.Contains(string(report), "Class entropy of the") {
				t.Errorf("dmoco report lacks the memory entropy:\n%s", report)
			}
			// The stream's entropy, the memory's reference: rho_max on the
			// dominant class, the rest shared by the other 9.
			rho := r.Config.RhoMax
			hs := -rho*math.Log(rho) - (1-rho)*math.Log((1-rho)/9)
			if res.StreamClassEntropy == nil || math.Abs(*res.StreamClassEntropy-hs) > 1e-12 ||
				!strings.Contains(string(report), fmt.Sprintf("the training stream's: %.4f", hs)) {
				t.Errorf("stream class entropy %v, want %v (rho_max %v), in the report too:\n%s", res.StreamClassEntropy, hs, rho, report)
			}
		case "byol":
			if res.MemoryClassEntropy != nil || res.MemoryClassCounts != nil || !strings.Contains(last, `"memory_class_entropy":null`) {
				t.Errorf("byol: memory fields %+v", res)
			}
			if !strings.Contains(string(report), "No memory metrics: method byol has no memory") {
				t.Errorf("byol report does not say there is no memory:\n%s", report)
			}
		}
		for _, f := range append(want, "analysis.json") {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Errorf("%s: %v", method, err)
				continue
			}
			if strings.HasSuffix(f, ".png") {
				if _, err := png.Decode(bytes.NewReader(b)); err != nil {
					t.Errorf("%s: %s: %v", method, f, err)
				}
				if !strings.Contains(string(report), "("+f+")") {
					t.Errorf("%s: report.md does not show %s", method, f)
				}
			}
		}
		if len(res.Plots) != len(want) {
			t.Errorf("%s: plots %v, expected %v", method, res.Plots, want)
		}
		if method == "dmoco" {
			// every plot of the table (and so of --help) is drawn for a memory run
			for _, p := range analyzePlots {
				if !slices.Contains(want, p.File) {
					t.Errorf("analyzePlots lists %s, not drawn for a dmoco run", p.File)
				}
			}
			if len(want) != len(analyzePlots) {
				t.Errorf("dmoco plots %v, analyzePlots has %d", want, len(analyzePlots))
			}
		}
		if res.OutDir != dir || res.Report != filepath.Join(dir, "report.md") {
			t.Errorf("%s: out_dir %q, report %q; expected the run directory %s", method, res.OutDir, res.Report, dir)
		}
	}
}

func TestAnalyzeBackboneAndNoMetrics(t *testing.T) {
	dir := evalTrainRun(t, "dmoco")
	if err := os.Remove(filepath.Join(dir, "metrics.jsonl")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := evalRunCLI("analyze", "--run", dir, "--layer", "backbone", "--limit", "50", "--tsne-points", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res analyzeResult
	lastJSON(t, stdout, &res)
	// class frequency, memory age and uses; no class curves without metrics.jsonl
	if res.Layer != "backbone" || len(res.Plots) != 3 || res.TSNEKLTest != nil {
		t.Errorf("result %+v", res)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(report), "no metrics.jsonl") {
		t.Errorf("report does not say metrics.jsonl is missing:\n%s", report)
	}
}

// TestAnalyzeLimitTooSmall checks that a --limit too small for two test
// images of each class (one image's intra-class variance is 0 by
// construction) is refused naming --limit.
func TestAnalyzeLimitTooSmall(t *testing.T) {
	dir := evalTrainRun(t, "simclr")
	for _, l := range []string{"1", "10", "19"} {
		wantCLIError(t, []string{"analyze", "--run", dir, "--limit", l, "--tsne-points", "0"}, "--limit: got "+l, "at least 2 test images per class (2 x 10 classes = 20), or 0 for the whole split")
	}
}

// TestAnalyzeTSNEFlags checks --tsne-method and --tsne-theta: bad values
// are refused naming the flag, an angle with the exact method is refused,
// and the exact method runs and is named in the JSON.
func TestAnalyzeTSNEFlags(t *testing.T) {
	dir := evalTrainRun(t, "simclr")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tsne-method", "fast"}, []string{"--tsne-method", `"fast"`, "barnes-hut or exact"}},
		{[]string{"--tsne-theta", "0"}, []string{"--tsne-theta", "> 0"}},
		{[]string{"--tsne-theta", "-1"}, []string{"--tsne-theta", "> 0"}},
		{[]string{"--tsne-method", "exact", "--tsne-theta", "0.3"}, []string{"--tsne-theta", "exact method"}},
		{[]string{"--tsne-points", "1"}, []string{"--tsne-points: got 1", "0 (no t-SNE) or at least 4"}},
		{[]string{"--tsne-points", "3"}, []string{"--tsne-points: got 3", "at least 4"}},
	} {
		wantCLIError(t, append([]string{"analyze", "--run", dir}, tc.args...), tc.want...)
	}
	code, stdout, stderr := evalRunCLI("analyze", "--run", dir, "--limit", "60", "--tsne-points", "40", "--tsne-iters", "50", "--tsne-method", "exact", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		TSNEMethod string   `json:"tsne_method"`
		KL         *float64 `json:"tsne_kl_test"`
	}
	if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil {
		t.Fatal(err)
	}
	if res.TSNEMethod != "exact" || res.KL == nil {
		t.Errorf("JSON %+v, want the exact method and a KL", res)
	}
}

// analyzeKeptRun trains a tiny dmoco run of 4 steps keeping the
// checkpoints of steps 0 (the initial model), 2 and 4, and returns its
// directory.
func analyzeKeptRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kept")
	code, _, stderr := evalRunCLI("train", "--preset", "tiny", "--method", "dmoco", "--steps", "4", "--checkpoint-every", "2", "--keep-checkpoints", "--out", dir)
	if code != 0 {
		t.Fatalf("training: exit %d: %s", code, stderr)
	}
	return dir
}

// TestAnalyzeStep checks that analyze --step N writes into
// RUN/analysis/step-NNNNNNN (named as the kept checkpoint's directory),
// leaves the run's own analysis alone, says where it wrote, and takes
// metrics.jsonl up to step N only.
func TestAnalyzeStep(t *testing.T) {
	dir := analyzeKeptRun(t)
	fast := []string{"--limit", "60", "--tsne-points", "30", "--tsne-iters", "50", "--json"}
	code, _, stderr := evalRunCLI(append([]string{"analyze", "--run", dir}, fast...)...)
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	before := map[string][]byte{}
	for _, f := range append([]string{"report.md", "analysis.json"}, "memory_classes.png", "training_curves.png", "tsne_test.png") {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}
	ms, err := train.ReadMetrics(dir)
	if err != nil || len(ms) != 4 {
		t.Fatalf("metrics.jsonl: %d lines, %v", len(ms), err)
	}
	for _, tc := range []struct {
		step    int
		records string
	}{
		{2, "- metrics.jsonl: 2 of 4 records (steps up to 2"},
		{4, "- metrics.jsonl: 4 records"},
	} {
		code, stdout, stderr := evalRunCLI(append([]string{"analyze", "--run", dir, "--step", fmt.Sprint(tc.step)}, fast...)...)
		if code != 0 {
			t.Fatalf("--step %d: exit %d: %s", tc.step, code, stderr)
		}
		var res analyzeResult
		lastJSON(t, stdout, &res)
		out := filepath.Join(dir, "analysis", fmt.Sprintf("step-%07d", tc.step))
		if res.OutDir != out || res.Report != filepath.Join(out, "report.md") || res.Step != tc.step {
			t.Errorf("--step %d: out_dir %q, report %q, step %d; expected %s", tc.step, res.OutDir, res.Report, res.Step, out)
		}
		// named as the kept checkpoint's directory
		if fi, err := os.Stat(filepath.Join(dir, train.KeptDir, filepath.Base(out))); err != nil || !fi.IsDir() {
			t.Errorf("--step %d: %s is not the name of a kept checkpoint's directory: %v", tc.step, filepath.Base(out), err)
		}
		if !strings.Contains(stdout, "into "+out) || !strings.Contains(stdout, "left as they were") {
			t.Errorf("--step %d: stdout does not say where it wrote:\n%s", tc.step, stdout)
		}
		if len(res.Plots) != len(analyzePlots) {
			t.Errorf("--step %d: plots %v", tc.step, res.Plots)
		}
		for _, p := range append(res.Plots, filepath.Join(out, "analysis.json"), res.Report) {
			if filepath.Dir(p) != out {
				t.Errorf("--step %d: %s outside %s", tc.step, p, out)
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("--step %d: %v", tc.step, err)
			}
		}
		report, err := os.ReadFile(res.Report)
		if err != nil {
			t.Fatal(err)
		}
		wantLoss := fmt.Sprintf("last loss %.4f", ms[tc.step-1].Loss)
		if !strings.Contains(string(report), tc.records) || !strings.Contains(string(report), wantLoss) || !strings.Contains(string(report), fmt.Sprintf("checkpoint step: %d", tc.step)) {
			t.Errorf("--step %d: report lacks %q or %q:\n%s", tc.step, tc.records, wantLoss, report)
		}
		if a := res.MemoryAge; a == nil || ms[tc.step-1].MemoryAgeMean == nil || a.AgeMean != *ms[tc.step-1].MemoryAgeMean {
			t.Errorf("--step %d: memory age %+v, expected metrics.jsonl's of step %d", tc.step, a, tc.step)
		}
	}
	for f, b := range before {
		if now, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !bytes.Equal(now, b) {
			t.Errorf("%s of the run directory changed by analyze --step (%v)", f, err)
		}
	}
}

// TestAnalyzeRemovesStalePlots checks that a plot not drawn this time has
// the file of an earlier analysis removed, by its exact name only, and
// that report.md says why.
func TestAnalyzeRemovesStalePlots(t *testing.T) {
	dir := evalTrainRun(t, "dmoco")
	if code, _, stderr := evalRunCLI("analyze", "--run", dir, "--limit", "60", "--tsne-points", "30", "--tsne-iters", "50"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	keep := []string{"tsne_test.png.orig", "my_tsne.png", "notes.md"}
	for _, f := range keep {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		args    []string
		gone    []string
		present []string
		note    string
	}{
		{"t-SNE skipped", []string{"--tsne-points", "0"}, []string{"tsne_test.png", "tsne_memory.png"},
			[]string{"class_frequency.png", "memory_classes.png", "training_curves.png"}, "t-SNE skipped (--tsne-points 0)"},
		{"no metrics.jsonl", []string{"--tsne-points", "0"}, []string{"memory_classes.png", "training_curves.png"},
			[]string{"class_frequency.png", "memory_age.png"}, "no metrics.jsonl"},
	} {
		if tc.name == "no metrics.jsonl" {
			if err := os.Remove(filepath.Join(dir, "metrics.jsonl")); err != nil {
				t.Fatal(err)
			}
		}
		code, stdout, stderr := evalRunCLI(append([]string{"analyze", "--run", dir, "--limit", "60", "--json"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		var res analyzeResult
		lastJSON(t, stdout, &res)
		for _, f := range tc.gone {
			if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %s of the earlier analysis still there (%v)", tc.name, f, err)
			}
			if slices.Contains(res.Plots, filepath.Join(dir, f)) {
				t.Errorf("%s: plots %v list %s", tc.name, res.Plots, f)
			}
		}
		for _, f := range append(tc.present, keep...) {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
		report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
		if !strings.Contains(string(report), tc.note) {
			t.Errorf("%s: report.md lacks %q:\n%s", tc.name, tc.note, report)
		}
		for _, f := range tc.gone {
			if strings.Contains(string(report), "("+f+")") {
				t.Errorf("%s: report.md shows %s", tc.name, f)
			}
		}
	}
}

// TestAnalyzeHelpListsFiles checks that analyze --help and the README's
// "Evaluation and analysis" section name every file analyze writes.
func TestAnalyzeHelpListsFiles(t *testing.T) {
	code, help, stderr := evalRunCLI("analyze", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	if i := strings.Index(section, "## Evaluation and analysis"); i >= 0 {
		section = section[i:]
		if j := strings.Index(section[3:], "\n## "); j >= 0 {
			section = section[:j+3]
		}
	} else {
		t.Fatal("README.md has no \"## Evaluation and analysis\" section")
	}
	files := []string{"analysis.json", "report.md"}
	for _, p := range analyzePlots {
		files = append(files, p.File)
	}
	for _, tc := range []struct{ name, text string }{{"analyze --help", help}, {"README's Evaluation and analysis", section}} {
		for _, f := range files {
			if !strings.Contains(tc.text, f) {
				t.Errorf("%s does not name %s", tc.name, f)
			}
		}
		if !strings.Contains(tc.text, "analysis/step-") {
			t.Errorf("%s does not say where --step writes", tc.name)
		}
	}
	if !strings.Contains(help, analyzeStepPattern) || strings.ReplaceAll(train.KeptName(1234567), "1234567", "NNNNNNN") != analyzeStepPattern {
		t.Errorf("help does not show the step directory's name")
	}
}

// TestReplayPlotClassFrequency checks memory replay's plot: a PNG from
// the class counts, an error naming the file without any.
func TestReplayPlotClassFrequency(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		freq    [][]int
		wantErr bool
	}{
		{"ten classes", [][]int{{6, 1, 1, 0, 0, 0, 0, 0, 0, 0}, {7, 1, 0, 0, 0, 0, 0, 0, 0, 0}}, false},
		{"no update", nil, true},
	} {
		path := filepath.Join(dir, tc.name+".png")
		err := replayPlotClassFrequency(path, tc.freq, 8, 4, "duel")
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: error %v, expected one naming %s", tc.name, err, path)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := os.ReadFile(path)
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestAnalyzeOneTestClass analyses a run whose test split holds one class:
// the latent-space measures, undefined, are null (n/a in the text) and the
// memory is analysed all the same (the whole analysis failed).
func TestAnalyzeOneTestClass(t *testing.T) {
	root := t.TempDir()
	imgs := filepath.Join(root, "imgs")
	imagetest.WriteFolder(t, imgs, []string{"train"}, []string{"a", "b"}, 8, 32)
	imagetest.WriteFolder(t, imgs, []string{"test"}, []string{"a"}, 8, 32)
	run := filepath.Join(root, "run")
	if code, _, stderr := evalRunCLI("train", "--preset", "tiny", "--method", "dmoco", "--dataset", "folder", "--data", imgs,
		"--steps", "2", "--batch", "8", "--memory-size", "16", "--knn-every", "0", "--out", run); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := evalRunCLI("analyze", "--run", run, "--limit", "0", "--tsne-points", "0", "--json")
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	var res analyzeResult
	lastJSON(t, stdout, &res)
	if res.IntraClassVariance != nil || res.InterClassSimilarity != nil || res.MemoryClassEntropy == nil || res.MemoryRows == 0 {
		t.Errorf("result %+v: want null latent-space measures and the memory's", res)
	}
	if !strings.Contains(stdout, "n/a (fewer than 2 classes in the test split)") {
		t.Errorf("stdout lacks the n/a:\n%s", stdout)
	}
}
