package analysis

import (
	"strings"
	"testing"
)

func TestReportMarkdown(t *testing.T) {
	loss, knn := 3.25, 0.5
	r := &Report{
		Run: "runs/a", Method: "dmoco", Dataset: "cifar10", Step: 100, Layer: "projector", TestRows: 4,
		Cluster:    &ClusterStats{Classes: []int{0, 1}, Counts: []int{2, 2}, IntraVariance: []float64{0.1, 0.2}, InterSimilarity: []float64{-0.5, -0.5}, MeanIntraVariance: 0.15, MeanInterSimilarity: -0.5},
		ClassNames: []string{"airplane", "automobile"}, MemorySize: 4, MemoryCounts: []int{3, 1},
		LastLoss: &loss, LoggedSteps: 10, KNNTop1: &knn,
		Figures: []Figure{{"tsne_test.png", "t-SNE of test features"}}, Notes: []string{"a note"},
	}
	md := r.Markdown()
	for _, want := range []string{"# Analysis of runs/a", "`dmoco`", "0.5623 nats", "| 0 airplane | 3 | 0.750 |", "**0.1500**", "**-0.5000**",
		"| 1 automobile | 2 | 0.2000 | -0.5000 |", "![t-SNE of test features](tsne_test.png)", "- a note", "last loss 3.2500", "kNN top-1 (k=200, T=0.07): 0.5000"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	r = &Report{Run: "b", MemoryNote: "simclr keeps no memory"}
	if md := r.Markdown(); !strings.Contains(md, "No memory metrics: simclr keeps no memory.") || !strings.Contains(md, "Not measured") {
		t.Errorf("no-memory report:\n%s", md)
	}
	r = &Report{Run: "c", MemorySize: 8}
	if md := r.Markdown(); !strings.Contains(md, "Memory of 8 rows; no class metrics") {
		t.Errorf("unlabelled memory report:\n%s", md)
	}
}

// TestReportMarkdownPrecision checks the memory's ages and the metrics
// line: means with one decimal, never rounded to an integer, and the
// records of the steps up to the checkpoint counted against the whole log.
func TestReportMarkdownPrecision(t *testing.T) {
	loss := 2.5
	for _, tc := range []struct {
		name    string
		r       Report
		want    []string
		notWant []string
	}{
		{"age means", Report{Run: "r", Step: 6, MemorySize: 64, MemoryAge: &MemoryAge{AgeMean: 2.25, AgeMedian: 2, AgeMax: 5, UsesMean: 2.1875, UsesMax: 5}},
			[]string{"mean 2.2, median 2.0, oldest 5 steps", "2.2 steps per row on average, at most 5"}, []string{"mean 2,"}},
		{"whole log", Report{Run: "r", Step: 6, LoggedSteps: 6, LastLoss: &loss},
			[]string{"- metrics.jsonl: 6 records, last loss 2.5000"}, []string{"records (steps"}},
		{"log up to a kept checkpoint", Report{Run: "r", Step: 2, LoggedSteps: 2, LoggedTotal: 6, LastLoss: &loss},
			[]string{"- metrics.jsonl: 2 of 6 records (steps up to 2, the checkpoint's; the curves stop there too), last loss 2.5000"}, nil},
	} {
		md := tc.r.Markdown()
		for _, w := range tc.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: report lacks %q:\n%s", tc.name, w, md)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(md, w) {
				t.Errorf("%s: report has %q:\n%s", tc.name, w, md)
			}
		}
	}
}
