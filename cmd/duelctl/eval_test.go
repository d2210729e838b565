package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/imagetest"
)

// evalRunCLI runs duelctl with args and returns its exit code, stdout and stderr.
func evalRunCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"duelctl"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// evalTrainRun trains a tiny run of method into a new directory and returns it.
func evalTrainRun(t *testing.T, method string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), method)
	code, _, stderr := evalRunCLI("train", "--preset", "tiny", "--method", method, "--steps", "4", "--out", dir)
	if code != 0 {
		t.Fatalf("training a %s run: exit %d: %s", method, code, stderr)
	}
	return dir
}

// lastJSON decodes the last line of stdout into v.
func lastJSON(t *testing.T, stdout string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("last line of stdout is not JSON: %v\n%s", err, stdout)
	}
}

// wantCLIError checks a one-line "duelctl: " error mentioning every want.
func wantCLIError(t *testing.T, args []string, want ...string) {
	t.Helper()
	code, _, stderr := evalRunCLI(args...)
	msg := strings.TrimSpace(stderr)
	if code == 0 || !strings.HasPrefix(msg, "duelctl: ") || strings.Contains(msg, "\n") || strings.Contains(msg, "panic") {
		t.Errorf("%v: exit %d, stderr %q: expected one line starting with duelctl:", args, code, stderr)
		return
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%v: error %q does not mention %q", args, msg, w)
		}
	}
}

func TestEval(t *testing.T) {
	dir := evalTrainRun(t, "dmoco")
	for _, tc := range []struct {
		args  []string
		proto string
		top5  bool
	}{
		{[]string{"--protocol", "knn", "--limit", "100"}, "knn", true},
		{[]string{"--protocol", "knn", "--limit", "100", "--vote", "majority", "--k", "5", "--layer", "projector"}, "knn", true},
		{[]string{"--protocol", "linear", "--limit", "100", "--epochs", "3", "--batch", "32"}, "linear", true},
		{[]string{"--protocol", "linear", "--limit", "100", "--epochs", "3", "--batch", "32", "--optimizer", "sgd"}, "linear", true},
	} {
		code, stdout, stderr := evalRunCLI(append([]string{"eval", "--run", dir, "--json"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		var res evalResult
		lastJSON(t, stdout, &res)
		if res.Protocol != tc.proto || res.Top1 < 0 || res.Top1 > 1 || (res.Top5 != nil) != tc.top5 ||
			res.TrainSamples != 100 || res.TestSamples != 100 || res.Classes != 10 || res.Step != 4 {
			t.Errorf("%v: result %+v", tc.args, res)
		}
		if tc.proto == "linear" && (res.Epochs != 3 || res.TrainLoss == nil) {
			t.Errorf("%v: result %+v", tc.args, res)
		}
		if wantOpt := map[bool]string{true: "sgd", false: "adam"}[slices.Contains(tc.args, "sgd")]; tc.proto == "linear" && res.Optimizer != wantOpt {
			t.Errorf("%v: optimizer %q, want %q", tc.args, res.Optimizer, wantOpt)
		}
		if title := map[bool]string{true: "SGD lr", false: "Adam lr"}[slices.Contains(tc.args, "sgd")]; tc.proto == "linear" && !strings.Contains(stdout, title) {
			t.Errorf("%v: the summary line does not name %q:\n%s", tc.args, title, stdout)
		}
	}
	// A batch beyond the samples is capped at them, silently (--batch
	// 1000000000 for 50 images must not allocate 128 GB).
	for _, batch := range []string{"50", "1000000000"} {
		code, stdout, stderr := evalRunCLI("eval", "--run", dir, "--json", "--protocol", "linear", "--batch", batch, "--epochs", "1", "--limit", "50")
		if code != 0 {
			t.Fatalf("--batch %s: exit %d: %s", batch, code, stderr)
		}
		var res evalResult
		lastJSON(t, stdout, &res)
		if res.TrainSamples != 50 || res.TestSamples != 50 || !strings.Contains(stdout, "batch 50)") {
			t.Errorf("--batch %s: result %+v\n%s", batch, res, stdout)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	dir := evalTrainRun(t, "simclr")
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"eval", "--protocol", "knn"}, []string{"--run"}},
		{[]string{"eval", "--run", filepath.Join(dir, "nope")}, []string{"--run", "nope"}},
		{[]string{"eval", "--run", file}, []string{"--run", "file"}},
		{[]string{"eval", "--run", dir, "--protocol", "svm"}, []string{"--protocol", "svm", "linear or knn"}},
		{[]string{"eval", "--run", dir, "--layer", "fc"}, []string{"--layer", "fc"}},
		{[]string{"eval", "--run", dir, "--k", "0", "--protocol", "knn"}, []string{"-k: got 0"}},
		{[]string{"eval", "--run", dir, "--temperature", "-1"}, []string{"--temperature"}},
		{[]string{"eval", "--run", dir, "--vote", "soft"}, []string{"--vote", "soft"}},
		{[]string{"eval", "--run", dir, "--epochs", "-1"}, []string{"--epochs"}},
		{[]string{"eval", "--run", dir, "--protocol", "linear", "--epochs", "0"}, []string{"--epochs: got 0, expected an integer >= 1"}},
		{[]string{"eval", "--run", dir, "--epochs", "0"}, []string{"--epochs: got 0, expected an integer >= 1"}},
		{[]string{"eval", "--run", dir, "--protocol", "knn", "--epochs", "0"}, []string{"--epochs: got 0, expected an integer >= 1"}},
		{[]string{"eval", "--run", dir, "--batch", "0"}, []string{"--batch"}},
		{[]string{"eval", "--run", dir, "--lr", "0"}, []string{"--lr"}},
		{[]string{"eval", "--run", dir, "--optimizer", "sgd", "--lr", "-1"}, []string{"--lr: got -1"}},
		{[]string{"eval", "--run", dir, "--optimizer", "lars"}, []string{"--optimizer", `"lars"`, "adam or sgd"}},
		{[]string{"eval", "--run", dir, "--limit", "-5"}, []string{"--limit"}},
		{[]string{"eval", "--run", dir, "--protocol", "knn", "--limit", "5"}, []string{"--limit: got 5", "at least one image per class (10)"}},
		{[]string{"eval", "--run", dir, "--device", "tpu"}, []string{"--device"}},
		{[]string{"eval", "--run", dir, "extra"}, []string{"extra"}},
		// --data beside the embedded set is refused, not ignored.
		{[]string{"eval", "--run", dir, "--data", "/some/cifar10"}, []string{`--data: got "/some/cifar10", expected nothing with the run's dataset default`, "--dataset (cifar10"}},
		{[]string{"analyze", "--run", dir, "--data", "/some/cifar10"}, []string{`--data: got "/some/cifar10", expected nothing with the run's dataset default`}},
		{[]string{"analyze", "--run", dir, "--tsne-init", "spectral"}, []string{"--tsne-init"}},
		{[]string{"analyze", "--run", dir, "--perplexity", "0"}, []string{"--perplexity"}},
		{[]string{"analyze", "--run", dir, "--tsne-points", "-1"}, []string{"--tsne-points"}},
		{[]string{"analyze"}, []string{"--run"}},
	} {
		wantCLIError(t, tc.args, tc.want...)
	}
}

// TestEvalCorruptRun damages one file of a run at a time.
func TestEvalCorruptRun(t *testing.T) {
	src := evalTrainRun(t, "dmoco")
	for _, file := range []string{"config.json", "checkpoint/state.json", "checkpoint/model.safetensors", "checkpoint/memory.bin"} {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, file)
		if _, err := os.Stat(p); err != nil {
			t.Logf("%s: not in this run layout, skipped", file)
			continue
		}
		if err := os.WriteFile(p, []byte("{ not what was expected"), 0o644); err != nil {
			t.Fatal(err)
		}
		wantCLIError(t, []string{"eval", "--run", dir, "--protocol", "knn", "--limit", "20"}, filepath.Base(file))
		wantCLIError(t, []string{"analyze", "--run", dir, "--limit", "20"}, filepath.Base(file))
	}
	// A checkpoint that cannot be read is not reported as missing ("no
	// checkpoint (expected checkpoint/state.json)").
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "checkpoint")
	if err := os.RemoveAll(ckpt); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(ckpt, []byte("x"), 0o644)
	wantCLIError(t, []string{"eval", "--run", dir, "--protocol", "knn", "--limit", "20"}, "checkpoint unreadable", "not a directory")

	dir = filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte("{\"step\": 1}\nnot json\n{\"step\": 3}\n"), 0o644)
	wantCLIError(t, []string{"analyze", "--run", dir, "--limit", "20", "--tsne-points", "0"}, "metrics.jsonl:2")
}

// TestEvalOneClass evaluates a run on a folder dataset of one class:
// refused, since every classifier scores 100% on it.
func TestEvalOneClass(t *testing.T) {
	root := t.TempDir()
	imgs := imagetest.WriteFolder(t, filepath.Join(root, "imgs"), []string{"train", "test"}, []string{"a"}, 8, 32)
	run := filepath.Join(root, "run")
	if code, _, stderr := evalRunCLI("train", "--preset", "tiny", "--method", "simclr", "--dataset", "folder", "--data", imgs,
		"--steps", "1", "--batch", "8", "--knn-every", "0", "--out", run); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	for _, protocol := range []string{"knn", "linear"} {
		wantCLIError(t, []string{"eval", "--run", run, "--protocol", protocol, "--epochs", "1"}, "holds 1 class, expected 2 at least")
	}
}

// TestEvalChangedData evaluates and analyses a run whose folder dataset
// gained a class after training (which renumbers the classes): refused,
// saying so, where both evaluated the new data as the run's.
func TestEvalChangedData(t *testing.T) {
	root := t.TempDir()
	imgs := imagetest.WriteFolder(t, filepath.Join(root, "imgs"), []string{"train", "test"}, []string{"a", "b"}, 8, 32)
	run := filepath.Join(root, "run")
	if code, _, stderr := evalRunCLI("train", "--preset", "tiny", "--method", "simclr", "--dataset", "folder", "--data", imgs,
		"--steps", "1", "--batch", "8", "--knn-every", "0", "--out", run); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	imagetest.WriteFolder(t, imgs, []string{"train", "test"}, []string{"aa"}, 8, 32)
	for _, args := range [][]string{
		{"eval", "--run", run, "--protocol", "knn"},
		{"analyze", "--run", run, "--limit", "0", "--tsne-points", "0"},
	} {
		wantCLIError(t, args, "not the data run "+run+" trained on", `its classes are ["a" "aa" "b"], the run trained on ["a" "b"]`)
	}
}
