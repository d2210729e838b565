package reproduce

import (
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/train"
)

// synthetic is a 4-class set of 8x8 images whose classes differ in colour.
func synthetic(n int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 1))
	ds := &data.Dataset{Name: "synthetic", Split: "train", H: 8, W: 8, C: 3, Classes: []string{"a", "b", "c", "d"}}
	for i := 0; i < n; i++ {
		c := i % 4
		ds.Labels = append(ds.Labels, int32(c))
		for p := 0; p < 64; p++ {
			for ch := 0; ch < 3; ch++ {
				ds.Pixels = append(ds.Pixels, uint8(40+60*((c+ch)%4)+r.IntN(40)))
			}
		}
	}
	return ds
}

// smokeGrid is the smoke preset cut to 2 steps on whole (synthetic) splits.
func smokeGrid(t *testing.T) Grid {
	t.Helper()
	g, err := Lookup("smoke")
	if err != nil {
		t.Fatal(err)
	}
	g.Set, g.ProbeLimit = []string{"steps=2"}, 0
	return g
}

func testOptions(out string, log *strings.Builder) Options {
	return Options{Out: out, Log: log, Train: synthetic(64, 1), Test: synthetic(32, 2)}
}

func TestRunWritesReportAndSkipsFinishedRuns(t *testing.T) {
	out := t.TempDir()
	g := smokeGrid(t)
	var log strings.Builder
	opts := testOptions(out, &log)
	rep, err := Run(context.Background(), g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || len(rep.Cells) != 2 {
		t.Fatalf("got %d runs, %d cells, want 2 and 2", len(rep.Runs), len(rep.Cells))
	}
	for _, r := range rep.Runs {
		if r.Steps != 2 || !(r.Top1 >= 0 && r.Top1 <= 1) || r.Classes != 4 {
			t.Errorf("run %+v: want 2 steps, a top-1 in [0, 1] and 4 classes", r)
		}
		if r.MemoryClassEntropy == nil || len(r.MemoryClassCounts) != 4 || r.MemoryRows == 0 || r.MemoryAge == nil || r.MemoryAge.AgeMax == nil {
			t.Errorf("run %s: memory measures missing: %+v", r.Variant, r)
		}
		if r.Layer != "projector" || r.ClusterSamples != 32 || r.IntraClassVariance == nil || r.InterClassSimilarity == nil {
			t.Errorf("run %s: clustering measures missing: %+v", r.Variant, r)
		}
		if r.Curves.KNNTop1.Len() != 1 || r.Curves.KNNTop1.Steps[0] != 2 || r.Curves.MemoryClassEntropy.Len() != 2 || r.Curves.MemoryAgeMean.Len() == 0 {
			t.Errorf("run %s: curves %+v, want kNN at step 2, entropy at steps 1, 2", r.Variant, r.Curves)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "model.safetensors")); err != nil {
			t.Errorf("run %s: %v", r.Variant, err)
		}
	}
	repDir := filepath.Join(out, "smoke")
	var saved Report
	b, err := os.ReadFile(filepath.Join(repDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &saved); err != nil || len(saved.Cells) != 2 || saved.Planned != 2 {
		t.Fatalf("results.json: %v, %+v", err, saved)
	}
	md, err := os.ReadFile(filepath.Join(repDir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| moco |", "| dmoco |", "ρmax 0.75", "70.12 ± 1.40", "dmoco − moco", "+7.87", "knn_top1.png", "2 of 2 finished"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	decodePNG(t, filepath.Join(repDir, "knn_top1.png"))

	// A second call finds every result saved and trains nothing.
	log.Reset()
	again, err := Run(context.Background(), g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(log.String(), "saved earlier") != 2 {
		t.Errorf("second run retrained:\n%s", log.String())
	}
	if again.Cells[0].Top1Mean != rep.Cells[0].Top1Mean {
		t.Errorf("saved result changed: %v vs %v", again.Cells[0].Top1Mean, rep.Cells[0].Top1Mean)
	}
}

// TestRunEvaluatesAgainWithNewSettings changes only a grid's evaluation
// (probe epochs, probe limit, cluster limit) after its runs finished: the
// runs are measured again without training, their probe.json records the
// new settings, and --report-only leaves out, naming both settings, the
// runs whose saved measures were taken with others.
func TestRunEvaluatesAgainWithNewSettings(t *testing.T) {
	out := t.TempDir()
	g := smokeGrid(t)
	var log strings.Builder
	opts := testOptions(out, &log)
	first, err := Run(context.Background(), g, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range first.Runs {
		if r.Evaluation == nil || *r.Evaluation != (Evaluation{ProbeEpochs: 2, ProbeLimit: 0, ClusterLimit: 2000}) {
			t.Fatalf("run %s: evaluation %+v, want the smoke grid's", r.Variant, r.Evaluation)
		}
	}
	for _, tc := range []struct {
		name    string
		edit    func(*Grid)
		samples int // cluster samples of the synthetic 32-image test split
	}{
		{"probe epochs", func(g *Grid) { g.ProbeEpochs = 3 }, 32},
		{"probe limit", func(g *Grid) { g.ProbeLimit = 16 }, 32},
		{"cluster limit", func(g *Grid) { g.ClusterLimit = 8 }, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := g
			tc.edit(&h)
			log.Reset()
			report := opts
			report.ReportOnly = true
			rep, err := Run(context.Background(), h, report)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Runs) != 0 || strings.Count(log.String(), "left out, evaluated with linear probe") != 2 || !strings.Contains(log.String(), h.evaluation().String()) {
				t.Errorf("--report-only with other settings: %d runs reported; the log:\n%s", len(rep.Runs), log.String())
			}
			log.Reset()
			rep, err = Run(context.Background(), h, opts)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(log.String(), "evaluated again") != 2 || strings.Contains(log.String(), "trained in") {
				t.Errorf("the log:\n%s", log.String())
			}
			for i, r := range rep.Runs {
				if r.Evaluation == nil || *r.Evaluation != h.evaluation() || r.ClusterSamples != tc.samples {
					t.Errorf("run %s: evaluation %+v, %d cluster samples; want %+v, %d", r.Variant, r.Evaluation, r.ClusterSamples, h.evaluation(), tc.samples)
				}
				if was := first.Runs[i]; r.Steps != was.Steps || r.Loss != was.Loss || r.TrainSeconds != was.TrainSeconds || r.Variant != was.Variant {
					t.Errorf("run %s: training record changed: %+v, was %+v", r.Variant, r, was)
				}
				saved, err := readResult(r.Dir)
				if err != nil || saved.Evaluation == nil || *saved.Evaluation != h.evaluation() {
					t.Errorf("run %s: probe.json %v, %+v", r.Variant, err, saved)
				}
			}
			// Back to the grid's settings: measured again once, then saved.
			if _, err := Run(context.Background(), g, opts); err != nil {
				t.Fatal(err)
			}
			log.Reset()
			if _, err := Run(context.Background(), g, opts); err != nil || strings.Count(log.String(), "saved earlier") != 2 {
				t.Errorf("%v; the log:\n%s", err, log.String())
			}
		})
	}
}

func TestRunsSharedBetweenPresets(t *testing.T) {
	out := t.TempDir()
	var log strings.Builder
	opts := testOptions(out, &log)
	first := smokeGrid(t)
	first.Name, first.Methods, first.RhoMax = "first", []string{"moco", "dmoco", "dsimclr:eps=0"}, []float64{0.5, 0.75}
	if _, err := Run(context.Background(), first, opts); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "trained in"); n != 6 {
		t.Fatalf("first grid trained %d runs, want 6:\n%s", n, log.String())
	}
	second := smokeGrid(t)
	second.Name, second.Kind, second.Methods, second.RhoMax = "second", Table2, []string{"dmoco", "dsimclr:eps=0"}, []float64{0.75}
	log.Reset()
	opts.Report = filepath.Join(out, "docs", "second")
	rep, err := Run(context.Background(), second, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "saved earlier"); n != 2 || strings.Contains(log.String(), "trained in") {
		t.Errorf("second grid: want 2 runs saved earlier and none trained:\n%s", log.String())
	}
	if len(rep.Runs) != 2 || rep.Runs[1].Variant != "dsimclr:eps=0" || filepath.Base(rep.Runs[1].Dir) != "dsimclr_eps-0-rho0.75-seed0" {
		t.Errorf("second grid runs: %+v", rep.Runs)
	}
	for _, f := range []string{"report.md", "results.json", "knn_top1.png", "memory_class_entropy.png", "memory_age_mean.png"} {
		if _, err := os.Stat(filepath.Join(opts.Report, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "first", "report.md")); err != nil {
		t.Error(err)
	}

	// The same run names with other settings: refused before anything trains.
	third := second
	third.Name, third.Set = "third", []string{"steps=3"}
	log.Reset()
	_, err = Run(context.Background(), third, opts)
	if err == nil || !strings.Contains(err.Error(), "dmoco-rho0.75-seed0") || !strings.Contains(err.Error(), "steps 2, expected 3") {
		t.Errorf("other settings: got %v, want an error naming the run and the setting", err)
	}
	if log.Len() != 0 {
		t.Errorf("refused grid ran: %s", log.String())
	}
}

// TestOlderProbeFile checks a probe.json written by an older duelctl, which
// does not record the evaluation settings of its measures: --report-only
// leaves the run out, saying why; a grid measures it again from its
// checkpoint, keeping what it records of the training; without a
// checkpoint the grid is refused, naming the file and the way out.
func TestOlderProbeFile(t *testing.T) {
	out := t.TempDir()
	var log strings.Builder
	opts := testOptions(out, &log)
	g := smokeGrid(t)
	g.Methods = []string{"dmoco"}
	if _, err := Run(context.Background(), g, opts); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "runs", "dmoco-rho0.75-seed0")
	for _, tc := range []struct {
		name, file, schema string
	}{
		// As the first version wrote it, without a schema.
		{"schema 1", `{"method": "dmoco", "rho_max": 0.75, "seed": 0, "dir": "elsewhere", "steps": 2, "loss": 1.5, "top1": 0.4242, "memory_class_entropy": 1.1, "train_seconds": 3, "probe_seconds": 1}`, "schema 1"},
		// As the second wrote it, without the evaluation settings.
		{"schema 2", `{"schema": 2, "method": "dmoco", "rho_max": 0.75, "seed": 0, "dir": "elsewhere", "steps": 2, "loss": 1.5, "top1": 0.4242, "classes": 4, "train_seconds": 3, "probe_seconds": 1}`, "schema 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write := func() {
				t.Helper()
				if err := os.WriteFile(filepath.Join(dir, probeFile), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write()
			log.Reset()
			report := opts
			report.ReportOnly = true
			rep, err := Run(context.Background(), g, report)
			if err != nil || len(rep.Runs) != 0 || !strings.Contains(log.String(), "left out, evaluated with settings it does not record ("+tc.schema) {
				t.Errorf("--report-only: %v, %d runs; the log:\n%s", err, len(rep.Runs), log.String())
			}
			log.Reset()
			rep, err = Run(context.Background(), g, opts)
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Runs[0]
			if !strings.Contains(log.String(), "evaluated again") || r.Top1 == 0.4242 || r.Steps != 2 || r.Loss != 1.5 || r.TrainSeconds != 3 || r.Dir != dir || r.Variant != "dmoco" {
				t.Errorf("older probe.json not measured again: %+v\n%s", r, log.String())
			}
			if r.Schema != resultSchema || !r.evaluatedWith(g.evaluation()) || r.Curves.KNNTop1.Len() != 1 || r.IntraClassVariance == nil || r.MemoryAge == nil || len(r.MemoryClassCounts) != 4 {
				t.Errorf("older probe.json not measured in full: %+v", r)
			}
			if saved, err := readResult(dir); err != nil || !saved.evaluatedWith(g.evaluation()) || saved.Top1 != r.Top1 {
				t.Errorf("new probe.json not saved: %+v, %v", saved, err)
			}
		})
	}
	// Without a checkpoint it cannot be measured again.
	if err := os.WriteFile(filepath.Join(dir, probeFile), []byte(`{"schema": 2, "method": "dmoco", "top1": 0.4242}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), g, opts)
	for _, want := range []string{filepath.Join(dir, probeFile), "settings it does not record (schema 2", "no checkpoint to measure it again", "remove " + dir} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without a checkpoint: %v, want it to mention %q", err, want)
		}
	}
}

func TestTrainedSeconds(t *testing.T) {
	dir := t.TempDir()
	lines := `{"step":1,"elapsed_s":2}
{"step":2,"elapsed_s":5}
{"step":3,"elapsed_s":1.5}
{"step":4,"elapsed_s":4}
`
	if err := os.WriteFile(filepath.Join(dir, train.MetricsFile), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := trainedSeconds(dir); math.Abs(got-9) > 1e-12 {
		t.Errorf("trainedSeconds = %v, want 5 + 4", got)
	}
	if got := trainedSeconds(filepath.Join(dir, "none")); got != 0 {
		t.Errorf("no metrics: %v", got)
	}
}

func TestMeanStd(t *testing.T) {
	for _, tc := range []struct {
		x         []float64
		mean, std float64
	}{
		{[]float64{0.5}, 0.5, 0},
		{[]float64{0.7, 0.8, 0.9}, 0.8, 0.1},
	} {
		m, s := meanStd(tc.x)
		if math.Abs(m-tc.mean) > 1e-12 || math.Abs(s-tc.std) > 1e-12 {
			t.Errorf("meanStd(%v) = %v, %v; want %v, %v", tc.x, m, s, tc.mean, tc.std)
		}
	}
}

// decodePNG checks that path holds a PNG image of a plausible size.
func decodePNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("%s: %v, want a plot", path, b)
	}
}

// TestInterruptedRunSaysHowToContinue: an interrupted grid's error tells
// the user to run the same command again (reproduce has no --resume).
func TestInterruptedRunSaysHowToContinue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log strings.Builder
	opts := testOptions(t.TempDir(), &log)
	opts.Progress = cancelOnWrite(cancel) // the first progress bar, during the first run's training
	_, err := Run(ctx, smokeGrid(t), opts)
	if !errors.Is(err, train.ErrInterrupted) || !strings.Contains(err.Error(), "run the same duelctl reproduce command again") || strings.Contains(err.Error(), "--resume") {
		t.Errorf("interrupted grid: %v, want the hint to run the same command again (log: %s)", err, log.String())
	}
}

// finishedMocoGrid runs the smoke grid cut to moco, one run, and returns
// the grid, its options (logging into log) and the run's directory.
func finishedMocoGrid(t *testing.T) (Grid, Options, *strings.Builder, string) {
	t.Helper()
	out := t.TempDir()
	log := &strings.Builder{}
	opts := testOptions(out, log)
	g := smokeGrid(t)
	g.Methods = []string{"moco"}
	if _, err := Run(context.Background(), g, opts); err != nil {
		t.Fatal(err)
	}
	return g, opts, log, filepath.Join(out, "runs", "moco-rho0.75-seed0")
}

// TestRunKilledBetweenCheckpointRenames goes on with a grid whose run was
// killed between the two renames of a checkpoint save (checkpoint.old/
// only): the run resumes from it, where the grid took the directory for a
// new run and train refused it ("holds a run already") on every attempt.
func TestRunKilledBetweenCheckpointRenames(t *testing.T) {
	g, opts, log, dir := finishedMocoGrid(t)
	if err := os.Remove(filepath.Join(dir, probeFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, train.CheckpointDir), filepath.Join(dir, train.CheckpointDir+".old")); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	rep, err := Run(context.Background(), g, opts)
	if err != nil || len(rep.Runs) != 1 || !strings.Contains(log.String(), "trained in") {
		t.Fatalf("the grid after a kill between the renames: %v; the log:\n%s", err, log.String())
	}
}

// TestEvaluationStopped stops the evaluation of a trained run (Ctrl-C
// while the probe fits): it ends with an error saying how to go on,
// wrapping the context's, and the grid then evaluates the run, whose
// training is kept.
func TestEvaluationStopped(t *testing.T) {
	g, opts, log, dir := finishedMocoGrid(t)
	if err := os.Remove(filepath.Join(dir, probeFile)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := evaluate(ctx, dir, g, opts)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "the evaluation of "+dir+", trained, was stopped (run the same duelctl reproduce command again") {
		t.Errorf("evaluation stopped: %v", err)
	}
	_, err = Run(ctx, g, opts)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped before run moco-rho0.75-seed0 (run the same duelctl reproduce command again") {
		t.Errorf("grid stopped: %v", err)
	}
	log.Reset()
	rep, err := Run(context.Background(), g, opts)
	if err != nil || len(rep.Runs) != 1 {
		t.Errorf("the grid after: %v, %d runs; the log:\n%s", err, len(rep.Runs), log.String())
	}
}

// cancelOnWrite is a writer that calls cancel when written to.
type cancelOnWrite func()

func (c cancelOnWrite) Write(p []byte) (int, error) {
	c()
	return len(p), nil
}

// TestCommittedGridsReport rewrites the reports of the grids committed in
// docs/results from their runs, as the README's commands do (--report-only
// on a copy of the runs): the runs' config.json files, some written before
// later settings existed, still match their grid's, and every run counts as
// done.
func TestCommittedGridsReport(t *testing.T) {
	for _, name := range []string{"table1-cpu", "table2-cpu", "f3-cpu"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("..", "..", "docs", "results", name, "runs")
			if _, err := os.Stat(src); err != nil {
				t.Skipf("no committed runs: %v", err)
			}
			g, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			if err := os.CopyFS(filepath.Join(out, "runs"), os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			rep, err := Run(context.Background(), g, Options{Out: out, Report: filepath.Join(out, "report"), Log: &log, ReportOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(log.String(), "not run yet") || len(rep.Runs) == 0 {
				t.Errorf("%d runs reported; the log:\n%s", len(rep.Runs), log.String())
			}
		})
	}
}

// TestClusterLimitTooSmall checks that a cluster limit below two test
// images per class is refused, naming the flag, before any run trains:
// one image's intra-class variance is 0 by construction.
func TestClusterLimitTooSmall(t *testing.T) {
	var log strings.Builder
	g := smokeGrid(t)
	g.Methods, g.ClusterLimit = []string{"moco"}, 7 // 4 classes
	out := t.TempDir()
	_, err := Run(context.Background(), g, testOptions(out, &log))
	if err == nil || !strings.Contains(err.Error(), "--cluster-limit 7: expected at least 2 test images per class (2 x 4 classes = 8)") {
		t.Errorf("cluster limit 7 of 4 classes: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "runs", "moco-rho0.75-seed0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run trained before the limit was refused: %v", err)
	}
}
