package conv

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
)

// TestTable checks which tuned choices Table accepts.
func TestTable(t *testing.T) {
	s1 := Shape{N: 8, In: 16, Out: 16, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}
	s2 := Shape{N: 8, In: 16, Out: 32, H: 8, W: 8, K: 3, S: 2, P: 1, ChannelMajor: true}
	odd := Shape{N: 8, In: 16, Out: 16, H: 5, W: 5, K: 3, S: 1, P: 1, ChannelMajor: true}
	for _, tc := range []struct {
		name   string
		choice Choice
		fast   bool
		err    string
	}{
		{"all three", Choice{Shape: s1, Forward: "direct", WeightGrad: "winograd", InputGrad: "im2col"}, true, ""},
		{"unknown", Choice{Shape: s1, Forward: "fft", WeightGrad: "im2col", InputGrad: "im2col"}, true, "unknown algorithm"},
		{"winograd at stride 2", Choice{Shape: s2, Forward: "winograd", WeightGrad: "im2col", InputGrad: "im2col"}, true, "does not apply"},
		{"direct without assembly", Choice{Shape: s1, Forward: "direct", WeightGrad: "im2col", InputGrad: "im2col"}, false, "does not apply"},
		{"direct on odd maps", Choice{Shape: odd, Forward: "im2col", WeightGrad: "direct", InputGrad: "im2col"}, true, "does not apply"},
	} {
		m, err := Table([]Choice{tc.choice}, tc.fast)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && m[tc.choice.Shape] != (Algos{Forward: Direct, WeightGrad: Winograd, InputGrad: Im2col}):
			t.Errorf("%s: %+v", tc.name, m[tc.choice.Shape])
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}

// TestTune tunes two small shapes, checks that every choice applies
// to its shape, and stores them in a wisdom file of the test's own.
func TestTune(t *testing.T) {
	t.Setenv(wisdom.Env, filepath.Join(t.TempDir(), "wisdom.json"))
	shapes := []Shape{
		{N: 4, In: 8, Out: 8, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 4, In: 3, Out: 8, H: 8, W: 8, K: 3, S: 2, P: 1},
		{N: 4, In: 8, Out: 16, H: 8, W: 8, K: 1, S: 2, P: 0, ChannelMajor: true},
	}
	var progress bytes.Buffer
	choices := Tune(shapes, TuneOptions{Rounds: 1, Progress: &progress})
	if len(choices) != len(shapes) || strings.Count(progress.String(), "\n") != len(shapes) {
		t.Fatalf("%d choices, progress %q", len(choices), progress.String())
	}
	if _, err := Table(choices, Fast()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := SaveTuning(choices); err != nil {
		t.Fatal(err)
	}
	var e Entry
	found, _, err := wisdom.Load(cpu.Detect().Key(), WisdomEntry, &e)
	if err != nil || !found || len(e.Choices) != len(shapes) || e.ISA != cpu.ISA().String() {
		t.Fatalf("read back: found %v, err %v, entry %+v", found, err, e)
	}
}
