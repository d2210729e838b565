package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
)

// TestModelCommandsRefuseCUDA runs the commands that place a model on
// --device with cuda on a machine without a usable GPU: each refuses in
// one line that names the flag, says why and advises --device cpu, before
// touching the run. (With a GPU, package train refuses a backend that lacks
// a layer's capability in the same form; duel/train's device tests cover
// it on the host-less test devices.)
func TestModelCommandsRefuseCUDA(t *testing.T) {
	if cuda.Available() == nil {
		t.Skip("a usable GPU: the refusal without one cannot be checked here")
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI("train", "--preset", "tiny", "--steps", "1", "--out", run); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"train", "--preset", "tiny", "--steps", "1", "--out", filepath.Join(dir, "cuda")},
		{"train", "--resume", "--out", run, "--steps", "2"},
		{"embed", "--run", run, "--input", filepath.Join(dir, "x.npy"), "--out", filepath.Join(dir, "y.npy")},
		{"eval", "--run", run, "--protocol", "knn"},
		{"analyze", "--run", run},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, stderr := runCLI(append(args, "--device", "cuda")...)
			if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "duelctl: --device cuda: ") ||
				!strings.Contains(stderr, "use --device cpu") {
				t.Errorf("exit %d, stderr %q: expected one line starting with \"duelctl: --device cuda: \" advising --device cpu", code, stderr)
			}
		})
	}
}
