package nn

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
	"github.com/duel-ssl/duel/kernels/conv"
)

// TestConvTable checks which tuned choices convTable accepts.
func TestConvTable(t *testing.T) {
	s1 := ConvShape{N: 8, In: 16, Out: 16, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}
	s2 := ConvShape{N: 8, In: 16, Out: 32, H: 8, W: 8, K: 3, S: 2, P: 1, ChannelMajor: true}
	odd := ConvShape{N: 8, In: 16, Out: 16, H: 5, W: 5, K: 3, S: 1, P: 1, ChannelMajor: true}
	for _, tc := range []struct {
		name   string
		choice ConvChoice
		fast   bool
		err    string
	}{
		{"all three", ConvChoice{Shape: s1, Forward: "direct", WeightGrad: "winograd", InputGrad: "im2col"}, true, ""},
		{"unknown", ConvChoice{Shape: s1, Forward: "fft", WeightGrad: "im2col", InputGrad: "im2col"}, true, "unknown algorithm"},
		{"winograd at stride 2", ConvChoice{Shape: s2, Forward: "winograd", WeightGrad: "im2col", InputGrad: "im2col"}, true, "does not apply"},
		{"direct without assembly", ConvChoice{Shape: s1, Forward: "direct", WeightGrad: "im2col", InputGrad: "im2col"}, false, "does not apply"},
		{"direct on odd maps", ConvChoice{Shape: odd, Forward: "im2col", WeightGrad: "direct", InputGrad: "im2col"}, true, "does not apply"},
	} {
		m, err := convTable([]ConvChoice{tc.choice}, tc.fast)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && m[tc.choice.Shape] != (conv.Algos{Forward: AlgoDirect, WeightGrad: AlgoWinograd, InputGrad: AlgoIm2col}):
			t.Errorf("%s: %+v", tc.name, m[tc.choice.Shape])
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}

// TestTuneConvs tunes two small shapes, checks that every choice applies
// to its shape, and stores them in a wisdom file of the test's own.
func TestTuneConvs(t *testing.T) {
	t.Setenv(wisdom.Env, filepath.Join(t.TempDir(), "wisdom.json"))
	shapes := []ConvShape{
		{N: 4, In: 8, Out: 8, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 4, In: 3, Out: 8, H: 8, W: 8, K: 3, S: 2, P: 1},
		{N: 4, In: 8, Out: 16, H: 8, W: 8, K: 1, S: 2, P: 0, ChannelMajor: true},
	}
	var progress bytes.Buffer
	choices := TuneConvs(shapes, ConvTuneOptions{Rounds: 1, Progress: &progress})
	if len(choices) != len(shapes) || strings.Count(progress.String(), "\n") != len(shapes) {
		t.Fatalf("%d choices, progress %q", len(choices), progress.String())
	}
	if _, err := convTable(choices, conv.Fast()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := SaveConvTuning(choices); err != nil {
		t.Fatal(err)
	}
	var e conv.Entry
	found, _, err := wisdom.Load(cpu.Detect().Key(), ConvWisdomEntry, &e)
	if err != nil || !found || len(e.Choices) != len(shapes) || e.ISA != cpu.ISA().String() {
		t.Fatalf("read back: found %v, err %v, entry %+v", found, err, e)
	}
}

// TestLastShape checks the geometry a convolution records.
func TestLastShape(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 3))
	c := NewConv2d(3, 4, 3, 2, 1, false, r)
	if _, ok := c.LastShape(); ok {
		t.Fatal("a shape before the first call")
	}
	c.Forward(nil, autograd.NewVar(randTensor(r, 2, 3, 8, 6), false))
	want := ConvShape{N: 2, In: 3, Out: 4, H: 8, W: 6, K: 3, S: 2, P: 1}
	if got, ok := c.LastShape(); !ok || got != want {
		t.Fatalf("LastShape = %+v, %v; want %+v", got, ok, want)
	}
}
