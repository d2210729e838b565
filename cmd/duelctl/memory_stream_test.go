package main

import (
	"path/filepath"
	"testing"

	"github.com/duel-ssl/duel/internal/npy"
)

// TestMemoryStreamThenReplay embeds an imbalanced stream with a trained
// run's encoder and replays it through DUEL: the README's "no class signal"
// measurement, end to end.
func TestMemoryStreamThenReplay(t *testing.T) {
	run := evalTrainRun(t, "dmoco")
	out := filepath.Join(t.TempDir(), "stream")
	code, stdout, stderr := evalRunCLI("memory", "stream", "--run", run, "--rows", "160", "--rho-max", "0.75", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("stream: exit %d: %s", code, stderr)
	}
	var st streamResult
	lastJSON(t, stdout, &st)
	if st.Rows != 160 || st.Dim != 32 || st.Layer != "projector" || len(st.ClassCounts) != 10 || st.ClassCounts[0] < 80 {
		t.Errorf("stream result %+v", st)
	}
	f, err := npy.ReadFile(filepath.Join(out, "features.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Shape) != 2 || f.Shape[0] != 160 || f.Shape[1] != 32 {
		t.Errorf("features.npy shape %v", f.Shape)
	}
	code, stdout, stderr = evalRunCLI("memory", "replay", "--features", filepath.Join(out, "features.npy"),
		"--labels", filepath.Join(out, "labels.npy"), "--size", "64", "--batch", "16", "--json")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	var rep replayResult
	lastJSON(t, stdout, &rep)
	if rep.Updates != 6 || len(rep.InitialScoreByClass) != 10 || rep.ClassEntropy == nil {
		t.Errorf("replay result %+v", rep)
	}
	for _, args := range [][]string{
		{"memory", "stream", "--run", run},
		{"memory", "stream", "--run", run, "--out", out, "--rows", "0"},
		{"memory", "stream", "--run", run, "--out", out, "--imbalance", "zipf"},
		{"memory", "stream", "--run", run, "--out", out, "--step", "3"},
	} {
		wantCLIError(t, args)
	}
}
