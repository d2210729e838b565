package main

import (
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestTrainRestoresGCPercent: train collects sooner (train.CollectSooner)
// for its own run only: the process's target is the same afterwards.
func TestTrainRestoresGCPercent(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if code, _, stderr := runCLI("train", "--preset", "tiny", "--steps", "1", "--knn-every", "0", "--out", filepath.Join(t.TempDir(), "run")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("the collector's target is %d%% after train, 100%% before", got)
	}
}
