package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/dirlock"
	"github.com/duel-ssl/duel/internal/imagetest"
)

// TestNewRunOverAnotherRunsFiles starts a new run in a directory holding
// another run's files: over its checkpoint it is refused (resume it); with
// the checkpoint removed by hand, any of the files the trained run left
// (kept checkpoints, model, analysis) refuses it too, naming them, since
// they would be taken for the new run's; files of a run that stopped
// before its first checkpoint (config.json, metrics.jsonl) do not.
func TestNewRunOverAnotherRunsFiles(t *testing.T) {
	src := t.TempDir()
	c := tinyConfig(t, "moco")
	c.Steps, c.KNNEvery, c.CheckpointEvery, c.KeepCheckpoints = 2, 0, 1, true
	if _, err := Train(context.Background(), c, tinyOptions(src)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"analysis.json", "report.md"} { // duelctl analyze's
		if err := os.WriteFile(filepath.Join(src, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(src, "analysis", "step-0000001"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyRun := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name   string
		remove []string // the files removed by hand first
		want   string   // "" = the new run trains
	}{
		{"over the checkpoint", nil, "holds a run already (continue it with --resume"},
		{"checkpoint removed", []string{CheckpointDir}, "holds checkpoints, model.safetensors, analysis, analysis.json, report.md of another run but no checkpoint to resume"},
		{"only the model left", []string{CheckpointDir, KeptDir, "analysis", "analysis.json", "report.md"}, "holds model.safetensors of another run"},
		{"only the analysis left", []string{CheckpointDir, KeptDir, ModelFile, "analysis.json", "report.md"}, "holds analysis of another run"},
		{"config and metrics left", []string{CheckpointDir, KeptDir, ModelFile, "analysis", "analysis.json", "report.md"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRun(t)
			for _, name := range tc.remove {
				if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Train(context.Background(), c, tinyOptions(dir))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("new run refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir)):
				t.Fatalf("error %v, want it to name %s and say %q", err, dir, tc.want)
			}
		})
	}
}

// TestRunLocked trains a run whose directory another process holds
// (dirlock, as a training duelctl holds it): resuming it and starting a
// new run there are refused, saying why, and nothing is written; once
// released, the run resumes.
func TestRunLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	c := tinyConfig(t, "moco")
	c.Steps, c.KNNEvery = 1, 0
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	release, err := dirlock.TryLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, MetricsFile))
	resume := tinyOptions(dir)
	resume.Resume = true
	c.Steps = 2
	for _, tc := range []struct {
		name string
		opts Options
	}{{"resume", resume}, {"new run", tinyOptions(dir)}} {
		_, err := Train(context.Background(), c, tc.opts)
		if err == nil || !errors.Is(err, dirlock.ErrHeld) || !strings.Contains(err.Error(), "--out "+dir+": another process is training this run") {
			t.Errorf("%s: %v, want the lock's error", tc.name, err)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, MetricsFile)); string(after) != string(before) {
		t.Errorf("metrics.jsonl changed while the run was locked")
	}
	release()
	if res, err := Train(context.Background(), c, resume); err != nil || res.Trained != 1 {
		t.Errorf("resume after the release: %+v, %v", res, err)
	}
}

// TestKNNWithoutTestSplitWritesNothing starts a run with the kNN monitor
// on a folder dataset without a test split: it is refused before anything
// is written, so that the same command without --knn-every then trains
// (a step-0 run left there would refuse it as "holds a run already").
func TestKNNWithoutTestSplitWritesNothing(t *testing.T) {
	root := t.TempDir()
	imgs := imagetest.WriteFolder(t, filepath.Join(root, "imgs"), nil, []string{"a", "b"}, 8, 32)
	c := tinyConfig(t, "moco")
	c.Dataset, c.Data, c.Steps, c.KNNEvery = "folder", imgs, 1, 1
	out := filepath.Join(root, "run")
	if _, err := Train(context.Background(), c, Options{Out: out}); err == nil || !strings.Contains(err.Error(), "--knn-every: opening the test split") {
		t.Fatalf("kNN without a test split: %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run left %s: %v", out, err)
	}
	c.KNNEvery = 0
	if _, err := Train(context.Background(), c, Options{Out: out}); err != nil {
		t.Errorf("the same run without the kNN monitor: %v", err)
	}
}
