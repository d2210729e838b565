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

// TestPick checks Tune's rule for a pass on made-up times: the built-in
// rule's algorithm stays unless another is at least tuneMargin faster.
func TestPick(t *testing.T) {
	algs := []Algo{Im2colBF16, DirectBF16, WinogradBF16}
	for _, tc := range []struct {
		name  string
		times map[Algo]float64
		rule  Algo
		want  Algo
	}{
		{"the rule is fastest", map[Algo]float64{Im2colBF16: 10, DirectBF16: 8, WinogradBF16: 9}, DirectBF16, DirectBF16},
		{"another by less than the margin", map[Algo]float64{Im2colBF16: 10, DirectBF16: 8, WinogradBF16: 7.3}, DirectBF16, DirectBF16},
		{"another by the margin", map[Algo]float64{Im2colBF16: 10, DirectBF16: 8, WinogradBF16: 7.2}, DirectBF16, WinogradBF16},
		{"the fastest of those past the margin", map[Algo]float64{Im2colBF16: 5, DirectBF16: 8, WinogradBF16: 6}, DirectBF16, Im2colBF16},
		{"a tie goes to the first measured", map[Algo]float64{Im2colBF16: 5, DirectBF16: 8, WinogradBF16: 5}, DirectBF16, Im2colBF16},
		{"the rule not measured", map[Algo]float64{Im2colBF16: 10, DirectBF16: 8, WinogradBF16: 9}, Winograd, DirectBF16},
	} {
		if got := pick(tc.times, algs, tc.rule); got != tc.want {
			t.Errorf("%s: pick = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestUseChoices checks that UseChoices sets the algorithms Choose and
// ChooseBF16 give to Auto convolutions, leaves the other precision's
// alone, refuses choices that do not apply, and puts back what was in use.
func TestUseChoices(t *testing.T) {
	s := Shape{N: 8, In: 16, Out: 16, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}
	rules, rulesBF16 := Choose(s, Auto), ChooseBF16(s, Auto)
	restore, err := UseChoices([]Choice{{Shape: s, Forward: "winograd", WeightGrad: "im2col", InputGrad: "winograd"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Choose(s, Auto), (Algos{Forward: Winograd, WeightGrad: Im2col, InputGrad: Winograd}); got != want {
		t.Errorf("Choose with the choices: %+v, want %+v", got, want)
	}
	if got := ChooseBF16(s, Auto); got != rulesBF16 {
		t.Errorf("ChooseBF16 changed with float32 choices: %+v, want %+v", got, rulesBF16)
	}
	other := Shape{N: 8, In: 32, Out: 32, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}
	if got, want := Choose(other, Auto), AutoAlgos(other, Fast()); got != want {
		t.Errorf("a shape the choices lack: %+v, want the rules' %+v", got, want)
	}
	inner, err := UseChoices(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := Choose(s, Auto); got != AutoAlgos(s, Fast()) {
		t.Errorf("nil choices: %+v, want the rules' %+v", got, AutoAlgos(s, Fast()))
	}
	inner()
	if _, err := UseChoices([]Choice{{Shape: s, Forward: "fft", WeightGrad: "im2col", InputGrad: "im2col"}}, false); err == nil {
		t.Error("an unknown algorithm was accepted")
	}
	if got := Choose(s, Auto); got.Forward != Winograd {
		t.Errorf("a refused table replaced the one in use: %+v", got)
	}
	restore()
	if got := Choose(s, Auto); got != rules {
		t.Errorf("after restore: %+v, want %+v", got, rules)
	}
	restoreBF16, err := UseChoices([]Choice{{Shape: s, Forward: "im2col-bf16", WeightGrad: "im2col-bf16", InputGrad: "winograd-bf16"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ChooseBF16(s, Auto), (Algos{Forward: Im2colBF16, WeightGrad: Im2colBF16, InputGrad: WinogradBF16}); got != want {
		t.Errorf("ChooseBF16 with the choices: %+v, want %+v", got, want)
	}
	restoreBF16()
	if got := ChooseBF16(s, Auto); got != rulesBF16 {
		t.Errorf("ChooseBF16 after restore: %+v, want %+v", got, rulesBF16)
	}
}

// TestFromRules counts the passes of choices that leave the built-in rules.
func TestFromRules(t *testing.T) {
	s := Shape{N: 8, In: 16, Out: 16, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}
	names := func(m map[string]Algo, a Algo) string {
		for n, al := range m {
			if al == a {
				return n
			}
		}
		return "none"
	}
	r, rb := AutoAlgos(s, Fast()), AutoAlgosBF16(s, FastBF16())
	same := Choice{Shape: s, Forward: names(AlgoNames, r.Forward), WeightGrad: names(AlgoNames, r.WeightGrad), InputGrad: names(AlgoNames, r.InputGrad)}
	sameBF16 := Choice{Shape: s, Forward: names(AlgoNamesBF16, rb.Forward), WeightGrad: names(AlgoNamesBF16, rb.WeightGrad), InputGrad: names(AlgoNamesBF16, rb.InputGrad)}
	other := same
	if other.Forward = "im2col"; r.Forward == Im2col {
		other.Forward = "winograd"
	}
	for _, tc := range []struct {
		name string
		c    Choice
		bf16 bool
		want int
	}{
		{"the rules", same, false, 0},
		{"the bf16 rules", sameBF16, true, 0},
		{"one pass", other, false, 1},
		{"float32 names read as bf16", same, true, 3},
	} {
		if got := tc.c.FromRules(tc.bf16); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
