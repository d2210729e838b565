package reproduce

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
)

// writeFiles creates each file of files (paths relative to dir, with
// their contents), making the folders above them.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// entries returns the names in dir, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestPruneArchive(t *testing.T) {
	archived := func(name string) map[string]string {
		return map[string]string{
			"runs/" + name + "/" + train.ConfigFile: "{}",
			"runs/" + name + "/" + probeFile:        "{}",
		}
	}
	merge := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	// reported is a run of this report whose run directory is elsewhere
	// (under OUT/runs).
	reported := []RunResult{{Dir: filepath.Join("elsewhere", "runs", "moco-rho0.5-seed0")}}
	for _, tc := range []struct {
		name    string
		files   map[string]string // under the report's directory
		dirs    []string          // empty folders under the report's directory
		runs    []RunResult       // nil: reported
		inRuns  bool              // the reported runs live in the report's runs/ (--report OUT)
		planned []string
		want    []string // what runs/ holds after
	}{
		{name: "another grid's runs removed",
			files:   merge(archived("moco-rho0.5-seed0"), archived("moco-rho0.75-seed0"), archived("dmoco-rho0.75-seed0")),
			planned: []string{"moco-rho0.5-seed0"},
			want:    []string{"moco-rho0.5-seed0"}},
		{name: "a half-written archived run removed",
			files:   map[string]string{"runs/dmoco-rho0.75-seed0/config.json": "{}"},
			planned: []string{"moco-rho0.5-seed0"},
			want:    nil},
		{name: "planned runs not reported kept",
			files:   merge(archived("moco-rho0.5-seed1"), archived("moco-rho0.75-seed0")),
			planned: []string{"moco-rho0.5-seed0", "moco-rho0.5-seed1"},
			want:    []string{"moco-rho0.5-seed1"}},
		{name: "what a user put there kept",
			files: merge(archived("moco-rho0.75-seed0"), map[string]string{
				"runs/notes.md":                           "mine",
				"runs/mine/README":                        "mine",
				"runs/dmoco-rho0.75-seed0/config.json":    "{}",
				"runs/dmoco-rho0.75-seed0/probe.json":     "{}",
				"runs/dmoco-rho0.75-seed0/comments.txt":   "mine",
				"runs/simclr-rho0.75-seed0/metrics.jsonl": "{}",
			}),
			dirs:    []string{"runs/empty", "runs/sub/probe.json"},
			planned: []string{"moco-rho0.5-seed0"},
			want:    []string{"dmoco-rho0.75-seed0", "empty", "mine", "notes.md", "simclr-rho0.75-seed0", "sub"}},
		{name: "the runs' own directory left alone",
			files:   merge(archived("moco-rho0.5-seed0"), archived("dmoco-rho0.1-seed0")),
			inRuns:  true,
			planned: []string{"moco-rho0.5-seed0"},
			want:    []string{"dmoco-rho0.1-seed0", "moco-rho0.5-seed0"}},
		{name: "no run reported: left alone",
			files:   archived("dmoco-rho0.1-seed0"),
			runs:    []RunResult{},
			planned: []string{"moco-rho0.5-seed0"},
			want:    []string{"dmoco-rho0.1-seed0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			runs := tc.runs
			if runs == nil {
				runs = reported
				if tc.inRuns {
					runs = []RunResult{{Dir: filepath.Join(dir, archiveDir, "moco-rho0.5-seed0")}}
				}
			}
			if err := pruneArchive(dir, runs, tc.planned); err != nil {
				t.Fatal(err)
			}
			if got := entries(t, filepath.Join(dir, archiveDir)); !slices.Equal(got, tc.want) {
				t.Errorf("runs/ holds %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReportReusedForAnotherGrid writes the reports of two grids into one
// directory, as duelctl reproduce --report R twice: the second (other
// ρmax, no kNN monitor) removes the first's knn_top1.png and archived
// runs, and keeps verdict.md and what a user put in R/runs. Then
// --report-only of the second grid with more seeds keeps the archived
// folders of its planned runs not finished yet.
func TestReportReusedForAnotherGrid(t *testing.T) {
	rep := t.TempDir()
	const verdict = "Hand-written: the runs agree."
	writeFiles(t, rep, map[string]string{
		"verdict.md":          verdict + "\n",
		"runs/notes/todo.txt": "mine",
	})
	var log strings.Builder

	first := smokeGrid(t)
	opts := testOptions(t.TempDir(), &log)
	opts.Report = rep
	if _, err := Run(context.Background(), first, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rep, "knn_top1.png")); err != nil {
		t.Fatalf("first grid: %v", err)
	}
	if got, want := entries(t, filepath.Join(rep, archiveDir)), []string{"dmoco-rho0.75-seed0", "moco-rho0.75-seed0", "notes"}; !slices.Equal(got, want) {
		t.Fatalf("first grid: runs/ holds %q, want %q", got, want)
	}

	second := smokeGrid(t)
	second.RhoMax, second.Set = []float64{0.5}, append(second.Set, "knn-every=0")
	opts = testOptions(t.TempDir(), &log)
	opts.Report = rep
	got, err := Run(context.Background(), second, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 2 || len(got.Plots) != 0 {
		t.Fatalf("second grid: %d runs and plots %+v, want 2 runs and no plot", len(got.Runs), got.Plots)
	}
	if _, err := os.Stat(filepath.Join(rep, "knn_top1.png")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("knn_top1.png of the first grid: got %v, want it removed", err)
	}
	if got, want := entries(t, filepath.Join(rep, archiveDir)), []string{"dmoco-rho0.5-seed0", "moco-rho0.5-seed0", "notes"}; !slices.Equal(got, want) {
		t.Errorf("second grid: runs/ holds %q, want %q", got, want)
	}
	for _, run := range []string{"dmoco-rho0.5-seed0", "moco-rho0.5-seed0"} {
		if got, want := entries(t, filepath.Join(rep, archiveDir, run)), []string{train.ConfigFile, probeFile}; !slices.Equal(got, want) {
			t.Errorf("archived run %s holds %q, want %q", run, got, want)
		}
	}
	if got, want := entries(t, rep), []string{"report.md", "results.json", "runs", "verdict.md"}; !slices.Equal(got, want) {
		t.Errorf("report directory holds %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(rep, "verdict.md")); err != nil || string(b) != verdict+"\n" {
		t.Errorf("verdict.md: %q, %v, want it as written", b, err)
	}
	md, err := os.ReadFile(filepath.Join(rep, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), verdict) || !strings.Contains(string(md), "ρmax 0.5") || strings.Contains(string(md), ".png") {
		t.Errorf("report.md: want the verdict, ρmax 0.5 and no plot:\n%s", md)
	}
	var saved Report
	if b, err := os.ReadFile(filepath.Join(rep, "results.json")); err != nil || json.Unmarshal(b, &saved) != nil || len(saved.Runs) != 2 {
		t.Errorf("results.json: %v, %+v", err, saved)
	}

	// A partial report: the seed-1 runs are planned, not run in this OUT;
	// the archived copy of one is kept, a run of no grid here is not.
	writeFiles(t, rep, map[string]string{
		"runs/moco-rho0.5-seed1/config.json":  "{}",
		"runs/moco-rho0.5-seed1/probe.json":   "{}",
		"runs/dmoco-rho0.25-seed0/probe.json": "{}",
	})
	second.Seeds = 2
	opts.ReportOnly = true
	log.Reset()
	got, err = Run(context.Background(), second, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 2 || got.Planned != 4 || strings.Count(log.String(), "not run yet") != 2 {
		t.Fatalf("report-only: %d of %d runs, want 2 of 4; the log:\n%s", len(got.Runs), got.Planned, log.String())
	}
	if got, want := entries(t, filepath.Join(rep, archiveDir)), []string{"dmoco-rho0.5-seed0", "moco-rho0.5-seed0", "moco-rho0.5-seed1", "notes"}; !slices.Equal(got, want) {
		t.Errorf("report-only: runs/ holds %q, want %q", got, want)
	}
}
