package reproduce

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRuns makes one finished run per (variant, rho, seed) of g, with
// top-1 from top1 and the other measures derived from it.
func fakeRuns(t *testing.T, g Grid, top1 func(v string, rho float64, seed int) float64) *Report {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	rep := newReport(g, len(g.runs()), "duelctl reproduce --preset "+g.Name+" --out repro")
	for _, k := range g.runs() {
		v := k.Variant.String()
		acc := top1(v, k.RhoMax, k.Seed)
		h, intra, inter, age := 2-k.RhoMax, 0.7+acc/10, -acc/10, 100*acc
		r := RunResult{Schema: resultSchema, Variant: v, Method: k.Variant.Method, RhoMax: k.RhoMax, Seed: k.Seed,
			Dir: "runs/" + k.name(), Steps: 1000, Top1: acc, Classes: 10, Layer: "projector", ClusterSamples: 2000,
			IntraClassVariance: &intra, InterClassSimilarity: &inter, TrainSeconds: 3000, ProbeSeconds: 600}
		if k.Variant.Method != "simclr" {
			r.MemoryClassEntropy, r.MemoryAge = &h, &MemoryAge{AgeMean: &age, AgeMax: ptr(3 * age)}
			r.Curves.MemoryClassEntropy = Curve{Steps: []int{500, 1000}, Values: []float64{h + 0.1, h}}
			r.Curves.MemoryAgeMean = Curve{Steps: []int{500, 1000}, Values: []float64{age / 2, age}}
		}
		r.Curves.KNNTop1 = Curve{Steps: []int{500, 1000}, Values: []float64{acc - 0.1 + 0.01*float64(k.Seed), acc}}
		rep.add(r)
	}
	return rep
}

// writeReport writes rep into a new directory holding verdict, and returns
// report.md.
func writeReport(t *testing.T, rep *Report, verdict string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if verdict != "" {
		if err := os.WriteFile(filepath.Join(dir, "verdict.md"), []byte(verdict+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(md)
}

// contains checks that md holds every want, in order.
func contains(t *testing.T, md string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(md[at:], w)
		if i < 0 {
			t.Errorf("report.md lacks %q after byte %d:\n%s", w, at, md)
			return
		}
		at += i + len(w)
	}
}

func TestReportTable1(t *testing.T) {
	g, _ := Lookup("table1-cpu")
	g.Methods, g.RhoMax, g.Seeds = []string{"moco", "dmoco", "simclr", "dsimclr:eps=0"}, []float64{0.1, 0.75}, 2
	rep := fakeRuns(t, g, func(v string, rho float64, seed int) float64 {
		switch v {
		case "moco":
			return 0.5 + 0.1*float64(seed)
		case "dmoco":
			return 0.55 + 0.15*float64(seed) // gains 5 and 10 points
		}
		return 0.4
	})
	rep.Runs = rep.Runs[:len(rep.Runs)-1] // the last run unfinished
	rep.summarise()
	dir, md := writeReport(t, rep, "**Verdict:** DUEL helps at rho 0.75.")
	contains(t, md,
		"# Table 1: linear probing under class imbalance (preset table1-cpu)\n\n**Verdict:** DUEL helps at rho 0.75.\n\n",
		"- command: `duelctl reproduce --preset table1-cpu --out repro`\n",
		"- commit: `", "- CPU: ", "- date: ", "- runs: 15 of 16 finished (partial",
		"- wall time: 15 h 00 min (training 12 h 30 min + evaluation 2 h 30 min, summed over the runs)\n",
		"- settings: training preset `cpu-small`, overrides `dataset=cifar10 arch=resnet18-w16 batch=64 steps=2000",
		"- paper's numbers: CIFAR-10\n",
		"## Linear probing top-1 (%)",
		"| method | ρmax 0.1 | paper | ρmax 0.75 | paper |",
		"| moco | 55.00 ± 7.07 | 80.99 ± 1.85 | 55.00 ± 7.07 | 70.12 ± 1.40 |",
		"| dmoco | 62.50 ± 10.61 | 82.58 ± 3.48 | 62.50 ± 10.61 | 77.99 ± 1.71 |",
		"| simclr | 40.00 ± 0.00 | 82.28 ± 1.26 |",
		"| dsimclr:eps=0 | 40.00 ± 0.00 |  | 40.00 (n=1) |  |",
		"## DUEL minus its base method",
		"| dmoco − moco | +7.50 ± 3.54 | +1.59 | +7.50 ± 3.54 | +7.87 |",
		"| dsimclr:eps=0 − simclr | +0.00 ± 0.00 |  | +0.00 (n=1) |  |",
		"## Memory class entropy at the end of training (nats)",
		"| dmoco | 1.9000 ± 0.0000 |",
		"## Plots", "knn_top1.png",
		"## Runs", "| dsimclr_eps-0-rho0.1-seed1 | 1000 | 40.00 |",
	)
	if strings.Contains(md, "memory_class_entropy.png") {
		t.Error("table1 report draws the entropy plot")
	}
	decodePNG(t, filepath.Join(dir, "knn_top1.png"))
	var saved Report
	b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(b, &saved); err != nil || len(saved.Runs) != 15 || saved.Provenance.Date == "" || len(saved.Plots) != 1 {
		t.Errorf("results.json: %v, %d runs, %+v, plots %v", err, len(saved.Runs), saved.Provenance, saved.Plots)
	}
}

func TestReportTable2(t *testing.T) {
	g, _ := Lookup("table2-cpu")
	g.Seeds = 2
	rep := fakeRuns(t, g, func(v string, rho float64, seed int) float64 { return 0.6 })
	dir, md := writeReport(t, rep, "")
	contains(t, md,
		"# Table 2: the memory's class entropy and the clustering of the representations (preset table2-cpu)\n\n- command: ",
		"## Memory class entropy at the end of training (nats)",
		"| method | ρmax 0.1 | paper | ρmax 0.5 | paper | ρmax 0.75 | paper |",
		"| stream (the sampler's classes) | 2.3026 |  | 1.7918 |  | 1.1116 |  |",
		"| moco | 1.9000 ± 0.0000 | 2.2991 | 1.5000 ± 0.0000 | 1.8394 | 1.2500 ± 0.0000 | 1.0523 |",
		"| dmoco | 1.9000 ± 0.0000 | 2.2988 |",
		"| dsimclr | 1.9000 ± 0.0000 |  |",
		"C = 10 classes",
		"## Intra-class variance", "| moco | 0.7600 ± 0.0000 | 0.7879 |",
		"## Inter-class similarity", "| dmoco | -0.0600 ± 0.0000 | -0.1033 | -0.0600 ± 0.0000 | -0.0846 | -0.0600 ± 0.0000 | -0.0513 |",
		"at most 2000 class-balanced test images",
		"## Memory row age at the end of training (steps)", "| moco | 60 / 180 |",
		"## Linear probing top-1 (%), for reference", "| moco | 60.00 ± 0.00 | 80.99 ± 1.85 |",
		"## Plots", "knn_top1.png", "memory_class_entropy.png", "memory_age_mean.png",
	)
	for _, f := range []string{"knn_top1.png", "memory_class_entropy.png", "memory_age_mean.png"} {
		decodePNG(t, filepath.Join(dir, f))
	}
}

func TestReportAblation(t *testing.T) {
	g, _ := Lookup("f3-cpu")
	g.Methods = append(g.Methods, "dsimclr:negatives=memory,eps=0,mem-refresh=8")
	g.Seeds = 1
	rep := fakeRuns(t, g, func(v string, rho float64, seed int) float64 { return 0.5 })
	_, md := writeReport(t, rep, "")
	contains(t, md,
		"# Appendix F.3: negatives and ε of D-SimCLR (preset f3-cpu)",
		"| variant | negatives | ε | paper's row | ρmax 0.75 | paper |",
		"| simclr | batch | 1 | SimCLR (batch only, ε = 1) | 50.00 | 72.81 ± 1.39 |",
		"| dsimclr:negatives=memory,eps=0 | memory | 0 | D-SimCLR (memory only, ε = 0) | 50.00 | 60.27 ± 1.07 |",
		"| dsimclr:negatives=mixed,eps=0 | mixed | 0 | D-SimCLR (mixed, ε = 0) | 50.00 | 74.85 ± 3.25 |",
		"| dsimclr | mixed | 1 | D-SimCLR (mixed, ε = 1) | 50.00 | 75.17 ± 3.49 |",
		"| dsimclr:negatives=memory,eps=0,mem-refresh=8 | memory | 0 |  | 50.00 |  |",
		"knn_top1.png",
	)
}

func TestStreamEntropy(t *testing.T) {
	for _, tc := range []struct {
		rho     float64
		classes int
		want    float64
	}{
		{0.1, 10, 2.302585092994046}, // uniform over 10 classes
		{0.5, 2, 0.6931471805599453},
		{0.75, 10, 1.111641288952863},
	} {
		if got := streamEntropy(tc.rho, tc.classes); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("streamEntropy(%g, %d) = %v, want %v", tc.rho, tc.classes, got, tc.want)
		}
	}
}

func TestProcModelName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpuinfo")
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14 96-Core Processor\n\nprocessor\t: 1\nmodel name\t: other\n"
	if err := os.WriteFile(path, []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := procModelName(path); got != "AMD EPYC 9R14 96-Core Processor" {
		t.Errorf("procModelName = %q", got)
	}
	if got := procModelName(filepath.Join(t.TempDir(), "none")); got != "" {
		t.Errorf("missing file: %q", got)
	}
	if cpuModel() == "" || buildCommit() == "" {
		t.Error("empty provenance")
	}
}

func TestRunCommits(t *testing.T) {
	made := func(c string) *Provenance { return &Provenance{Commit: c} }
	for _, tc := range []struct {
		runs []RunResult
		want string
	}{
		{nil, ""},
		{[]RunResult{{Made: made("abc")}, {Made: made("abc")}}, ""},
		{[]RunResult{{Made: made("old")}, {}, {Made: made("old")}, {Made: made("abc")}},
			" (this report); runs trained by `old` (2), unrecorded (1), `abc` (1)"},
	} {
		r := &Report{Runs: tc.runs, Provenance: Provenance{Commit: "abc"}}
		if got := r.runCommits(); got != tc.want {
			t.Errorf("runCommits() = %q, want %q", got, tc.want)
		}
	}
}
