package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
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
			math.IsNaN(res.IntraClassVariance) || res.InterClassSimilarity < -1 || res.InterClassSimilarity > 1 {
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

// TestAnalyzeLimitTooSmall checks that a --limit too small for two
// classes is refused naming --limit.
func TestAnalyzeLimitTooSmall(t *testing.T) {
	dir := evalTrainRun(t, "simclr")
	wantCLIError(t, []string{"analyze", "--run", dir, "--limit", "1", "--tsne-points", "0"}, "--limit: got 1", "or 0 for the whole split")
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
