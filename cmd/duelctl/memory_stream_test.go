package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
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
	// A --batch beyond the rows is the whole stream at once.
	code, stdout, stderr = evalRunCLI("memory", "stream", "--run", run, "--rows", "40", "--batch", "1000000000", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("stream --batch 1000000000: exit %d: %s", code, stderr)
	}
	lastJSON(t, stdout, &st)
	if st.Rows != 40 {
		t.Errorf("stream --batch 1000000000: result %+v", st)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--run", run}, []string{"--out"}},
		{[]string{"--run", run, "--out", out, "--rows", "0"}, []string{"--rows: got 0"}},
		{[]string{"--run", run, "--out", out, "--batch", "0"}, []string{"--batch: got 0"}},
		{[]string{"--run", run, "--out", out, "--imbalance", "zipf"}, []string{`--imbalance: got "zipf", expected dominant, longtail`}},
		{[]string{"--run", run, "--out", out, "--imbalance", "foo"}, []string{`--imbalance: got "foo"`}},
		{[]string{"--run", run, "--out", out, "--rho-max", "2"}, []string{"--rho-max: got 2, expected a probability in [0, 1]"}},
		{[]string{"--run", run, "--out", out, "--dominant-class", "-1"}, []string{"--dominant-class: got -1"}},
		{[]string{"--run", run, "--out", out, "--dominant-class", "10"}, []string{"--dominant-class: got 10, expected a class index below 10"}},
		{[]string{"--run", run, "--out", out, "--imbalance-ratio", "0"}, []string{"--imbalance-ratio: got 0, expected a number >= 1"}},
		{[]string{"--run", run, "--out", out, "--step", "3"}, []string{"step 3"}},
	} {
		wantCLIError(t, append([]string{"memory", "stream"}, tc.args...), tc.want...)
		if _, _, stderr := evalRunCLI(append([]string{"memory", "stream"}, tc.args...)...); strings.Contains(stderr, "sampler:") {
			t.Errorf("%v: %q: the sampler's own prefix", tc.args, stderr)
		}
	}
	if train.MachineMemory() > 0 {
		wantCLIError(t, []string{"memory", "stream", "--run", run, "--out", out, "--rows", "1000000000000"},
			"--rows: got 1000000000000, needs about ", "this machine has ")
	}
}

// TestMemoryStreamProfileSettings checks that stream.json (and the --json
// object) records, of the sampler's settings, exactly those the
// --imbalance profile uses.
func TestMemoryStreamProfileSettings(t *testing.T) {
	run := evalTrainRun(t, "moco")
	common := []string{"--rho-max", "0.6", "--dominant-class", "2", "--imbalance-ratio", "10", "--stream-seed", "3", "--rows", "40"}
	for _, tc := range []struct {
		profile string
		want    map[string]any // nil: absent
	}{
		{"dominant", map[string]any{"rho_max": 0.6, "dominant_class": 2.0, "imbalance_ratio": nil}},
		{"longtail", map[string]any{"rho_max": nil, "dominant_class": 2.0, "imbalance_ratio": 10.0}},
		{"longtail-subset", map[string]any{"rho_max": nil, "dominant_class": 2.0, "imbalance_ratio": 10.0}},
		{"uniform", map[string]any{"rho_max": nil, "dominant_class": nil, "imbalance_ratio": nil}},
	} {
		out := filepath.Join(t.TempDir(), tc.profile)
		args := append([]string{"memory", "stream", "--run", run, "--imbalance", tc.profile, "--out", out, "--json"}, common...)
		code, stdout, stderr := evalRunCLI(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.profile, code, stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, "stream.json"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		for what, text := range map[string][]byte{"stream.json": b, "--json": []byte(lines[len(lines)-1])} {
			var got map[string]any
			if err := json.Unmarshal(text, &got); err != nil {
				t.Fatalf("%s: %s: %v", tc.profile, what, err)
			}
			if got["imbalance"] != tc.profile || got["stream_seed"] != 3.0 {
				t.Errorf("%s: %s imbalance %v, stream_seed %v", tc.profile, what, got["imbalance"], got["stream_seed"])
			}
			for key, want := range tc.want {
				v, ok := got[key]
				switch {
				case want == nil && ok:
					t.Errorf("%s: %s has %q: %v, want it absent", tc.profile, what, key, v)
				case want != nil && v != want:
					t.Errorf("%s: %s %q: %v, want %v", tc.profile, what, key, v, want)
				}
			}
		}
	}
}
