package conv

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
)

// TestTable checks which tuned choices Table and TableBF16 accept, each
// one's names only, and the algorithms a valid choice gives.
func TestTable(t *testing.T) {
	s1 := Shape{N: 8, In: 16, Out: 16, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}
	s2 := Shape{N: 8, In: 16, Out: 32, H: 8, W: 8, K: 3, S: 2, P: 1, ChannelMajor: true}
	odd := Shape{N: 8, In: 16, Out: 16, H: 5, W: 5, K: 3, S: 1, P: 1, ChannelMajor: true}
	fp32, bf16 := Table, TableBF16
	for _, tc := range []struct {
		name   string
		table  func([]Choice, bool) (map[Shape]Algos, error)
		choice Choice
		fast   bool
		err    string
		want   Algos // for a choice without error
	}{
		{"all three", fp32, Choice{Shape: s1, Forward: "direct", WeightGrad: "winograd", InputGrad: "im2col"}, true, "", Algos{Forward: Direct, WeightGrad: Winograd, InputGrad: Im2col}},
		{"unknown", fp32, Choice{Shape: s1, Forward: "fft", WeightGrad: "im2col", InputGrad: "im2col"}, true, "unknown algorithm", Algos{}},
		{"winograd at stride 2", fp32, Choice{Shape: s2, Forward: "winograd", WeightGrad: "im2col", InputGrad: "im2col"}, true, "does not apply", Algos{}},
		{"direct without assembly", fp32, Choice{Shape: s1, Forward: "direct", WeightGrad: "im2col", InputGrad: "im2col"}, false, "does not apply", Algos{}},
		{"direct on odd maps", fp32, Choice{Shape: odd, Forward: "im2col", WeightGrad: "direct", InputGrad: "im2col"}, true, "does not apply", Algos{}},
		{"a bfloat16 name in Table", fp32, Choice{Shape: s1, Forward: "im2col-bf16", WeightGrad: "im2col", InputGrad: "im2col"}, true, "unknown algorithm", Algos{}},
		{"bf16: both", bf16, Choice{Shape: s1, Forward: "direct-bf16", WeightGrad: "im2col-bf16", InputGrad: "direct-bf16"}, true, "", Algos{Forward: DirectBF16, WeightGrad: Im2colBF16, InputGrad: DirectBF16}},
		{"bf16: a float32 name", bf16, Choice{Shape: s1, Forward: "direct", WeightGrad: "im2col-bf16", InputGrad: "im2col-bf16"}, true, "unknown algorithm", Algos{}},
		{"bf16: direct without assembly", bf16, Choice{Shape: s1, Forward: "direct-bf16", WeightGrad: "im2col-bf16", InputGrad: "im2col-bf16"}, false, "does not apply", Algos{}},
		{"bf16: direct on odd maps", bf16, Choice{Shape: odd, Forward: "im2col-bf16", WeightGrad: "direct-bf16", InputGrad: "im2col-bf16"}, true, "does not apply", Algos{}},
	} {
		m, err := tc.table([]Choice{tc.choice}, tc.fast)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && m[tc.choice.Shape] != tc.want:
			t.Errorf("%s: %+v, want %+v", tc.name, m[tc.choice.Shape], tc.want)
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

// TestTuneBF16 tunes the bfloat16 algorithms of small shapes, checks that
// every choice is one of them and applies, and stores them in their own
// entry beside the float32 one.
func TestTuneBF16(t *testing.T) {
	t.Setenv(wisdom.Env, filepath.Join(t.TempDir(), "wisdom.json"))
	shapes := []Shape{
		{N: 4, In: 8, Out: 8, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 5, In: 3, Out: 8, H: 8, W: 8, K: 3, S: 2, P: 1},
	}
	fp32 := Tune(shapes[:1], TuneOptions{Rounds: 1})
	choices := Tune(shapes, TuneOptions{Rounds: 1, BF16: true})
	if len(choices) != len(shapes) {
		t.Fatalf("%d choices for %d shapes", len(choices), len(shapes))
	}
	m, err := TableBF16(choices, FastBF16())
	if err != nil {
		t.Fatal(err)
	}
	for s, a := range m {
		for _, al := range []Algo{a.Forward, a.WeightGrad, a.InputGrad} {
			if al != Im2colBF16 && al != DirectBF16 && al != WinogradBF16 {
				t.Errorf("shape %+v: %v", s, a)
			}
		}
	}
	if _, _, err := SaveTuning(fp32); err != nil {
		t.Fatal(err)
	}
	if _, _, err := SaveTuningBF16(choices); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		entry string
		n     int
	}{{WisdomEntry, 1}, {WisdomEntryBF16, len(shapes)}} {
		var e Entry
		found, _, err := wisdom.Load(cpu.Detect().Key(), c.entry, &e)
		if err != nil || !found || len(e.Choices) != c.n {
			t.Errorf("entry %s read back: found %v, err %v, %d choices, want %d", c.entry, found, err, len(e.Choices), c.n)
		}
	}
}
