package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/duel-ssl/duel/internal/imagetest"
)

// TestEvalTransfer evaluates a run trained on the embedded default data on
// another dataset (--dataset folder --data DIR): the splits are that
// dataset's, its classes in the JSON; analyze reads the run's dataset
// from --data; an unknown dataset is refused naming --dataset.
func TestEvalTransfer(t *testing.T) {
	run := evalTrainRun(t, "simclr")
	folder := imagetest.WriteFolder(t, t.TempDir(), []string{"train", "test"}, []string{"a", "b", "c"}, 6, 12)
	for _, protocol := range []string{"knn", "linear"} {
		code, stdout, stderr := evalRunCLI("eval", "--run", run, "--protocol", protocol, "--epochs", "2", "-k", "5",
			"--dataset", "folder", "--data", folder, "--json")
		if code != 0 {
			t.Fatalf("%s on the folder: exit %d: %s", protocol, code, stderr)
		}
		var res evalResult
		lastJSON(t, stdout, &res)
		if res.Dataset != "folder" || res.Classes != 3 || res.TrainSamples != 18 || res.TestSamples != 18 || !(res.Top1 >= 0 && res.Top1 <= 1) {
			t.Errorf("%s on the folder: %+v", protocol, res)
		}
	}
	code, stdout, stderr := evalRunCLI("eval", "--run", run, "--protocol", "knn", "--limit", "50", "--json")
	var res evalResult
	if lastJSON(t, stdout, &res); code != 0 || res.Dataset != "default" {
		t.Errorf("eval on the run's dataset: exit %d, %+v: %s", code, res, stderr)
	}
	// A run trained on the folder, analysed after the folder moved.
	onFolder := filepath.Join(t.TempDir(), "onfolder")
	if code, _, stderr := evalRunCLI("train", "--preset", "tiny", "--method", "dmoco", "--steps", "1", "--dataset", "folder", "--data", folder, "--out", onFolder); code != 0 {
		t.Fatalf("training on the folder: exit %d: %s", code, stderr)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(folder, moved); err != nil {
		t.Fatal(err)
	}
	wantCLIError(t, []string{"analyze", "--run", onFolder, "--tsne-points", "0"}, folder)
	if code, _, stderr := evalRunCLI("analyze", "--run", onFolder, "--tsne-points", "0", "--data", moved); code != 0 {
		t.Errorf("analyze --data on the moved folder: exit %d: %s", code, stderr)
	}
	wantCLIError(t, []string{"eval", "--run", run, "--dataset", "imagenet"}, "--dataset imagenet", "unknown dataset")
	wantCLIError(t, []string{"eval", "--run", run, "--dataset", "folder", "--data", filepath.Join(moved, "none")}, "--dataset folder", "none")
}
