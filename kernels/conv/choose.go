package conv

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
)

// WisdomEntry is the name of the convolutions' entry in the wisdom file
// (internal/wisdom): for each tuned shape, the algorithm of each pass.
const WisdomEntry = "nn.conv"

// WisdomEntryBF16 is the entry of the bfloat16 convolutions (Tune with
// TuneOptions.BF16): the algorithms ChooseBF16 picks from.
const WisdomEntryBF16 = "nn.conv.bf16"

// Choice is the algorithm (a name of AlgoNames, or of AlgoNamesBF16 in
// the bfloat16 entry) of each pass of a shape, and the fastest call of
// each (milliseconds of CPU time, all threads) that decided it: one
// element of a wisdom entry.
type Choice struct {
	Shape
	Forward    string     `json:"forward"`
	WeightGrad string     `json:"weight_grad"`
	InputGrad  string     `json:"input_grad"`
	MS         [3]float64 `json:"ms"`
}

// Entry is the entry WisdomEntry (or WisdomEntryBF16) holds for a CPU.
type Entry struct {
	ISA     string   `json:"isa"` // the level (cpu.ISA) it was tuned at; applied only at the same level
	Threads int      `json:"threads"`
	Choices []Choice `json:"choices"`
	Date    string   `json:"date"`
}

// AlgoNames maps the names of the wisdom file to the algorithms.
var AlgoNames = map[string]Algo{"im2col": Im2col, "winograd": Winograd, "direct": Direct}

// AlgoNamesBF16 maps the names of the bfloat16 entry to the algorithms.
var AlgoNamesBF16 = map[string]Algo{"im2col-bf16": Im2colBF16, "direct-bf16": DirectBF16, "winograd-bf16": WinogradBF16}

// tuned and tunedBF16 return the tuned choices of this CPU at this level,
// read once from the wisdom file (loadTuned).
var (
	tuned     = sync.OnceValue(func() map[Shape]Algos { return loadTuned(WisdomEntry, false) })
	tunedBF16 = sync.OnceValue(func() map[Shape]Algos { return loadTuned(WisdomEntryBF16, true) })
)

// inUse holds the tuned tables UseChoices set for this process, which
// take the wisdom file's place: [0] the float32 one, [1] the bfloat16 one.
var inUse [2]atomic.Pointer[map[Shape]Algos]

// tunedTable returns the tuned table Choose (ChooseBF16 with bf16) looks
// up: the one UseChoices set, else the wisdom file's.
func tunedTable(bf16 bool) map[Shape]Algos {
	i := 0
	if bf16 {
		i = 1
	}
	if p := inUse[i].Load(); p != nil {
		return *p
	}
	if bf16 {
		return tunedBF16()
	}
	return tuned()
}

// TunedShapes returns the number of shapes whose algorithms Choose
// (ChooseBF16 with bf16) takes from a tuned table, the wisdom file's or
// the one UseChoices set, rather than from the built-in rules: 0 when
// there is none.
func TunedShapes(bf16 bool) int { return len(tunedTable(bf16)) }

// UseChoices makes the Auto convolutions of this process (the bfloat16
// ones with bf16) take their algorithms from choices instead of the wisdom
// file: the built-in rules for a shape choices lacks, so that nil choices
// mean the built-in rules alone. It returns a function that puts back what
// was in use before, and Table's (TableBF16's) error for choices that name
// an algorithm that does not apply, leaving the table in use unchanged.
// duelctl bench step --tune-conv times the step with the tuned choices and
// with the rules this way before it stores either.
func UseChoices(choices []Choice, bf16 bool) (restore func(), err error) {
	i, table := 0, Table
	if bf16 {
		i = 1
		table = func(c []Choice, fast bool) (map[Shape]Algos, error) { return TableBF16(c, fast && FastBF16()) }
	}
	m, err := table(choices, Fast())
	if err != nil {
		return func() {}, err
	}
	prev := inUse[i].Swap(&m)
	return func() { inUse[i].Store(prev) }, nil
}

// loadTuned reads the wisdom file's entry of this CPU (the bfloat16 one
// with bf16); a file or entry that cannot be used is reported in one line
// on stderr and the built-in rules apply.
func loadTuned(entry string, bf16 bool) map[Shape]Algos {
	var e Entry
	found, _, err := wisdom.Load(cpu.Detect().Key(), entry, &e)
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: %v; convolutions use their built-in rules\n", err)
		return nil
	}
	if !found || e.ISA != cpu.ISA().String() {
		return nil
	}
	table := Table
	if bf16 {
		table = func(c []Choice, fast bool) (map[Shape]Algos, error) { return TableBF16(c, fast && FastBF16()) }
	}
	m, err := table(e.Choices, Fast())
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: wisdom entry %s for this CPU: %v; convolutions use their built-in rules\n", entry, err)
		return nil
	}
	return m
}

// Table turns choices into a lookup table, checking that each names
// algorithms that apply to its shape (direct ones only with the assembly
// kernels: fast).
func Table(choices []Choice, fast bool) (map[Shape]Algos, error) {
	return table(choices, AlgoNames, fast)
}

// TableBF16 is Table for the bfloat16 entry (DirectBF16 only with the
// bfloat16 assembly kernels: fast).
func TableBF16(choices []Choice, fast bool) (map[Shape]Algos, error) {
	return table(choices, AlgoNamesBF16, fast)
}

// table is Table over the algorithms names.
func table(choices []Choice, names map[string]Algo, fast bool) (map[Shape]Algos, error) {
	m := make(map[Shape]Algos, len(choices))
	for _, c := range choices {
		var a [3]Algo
		for i, name := range []string{c.Forward, c.WeightGrad, c.InputGrad} {
			al, ok := names[name]
			if !ok {
				return nil, fmt.Errorf("shape %+v: unknown algorithm %q", c.Shape, name)
			}
			if !appliesAt(c.Shape, al, fast) {
				return nil, fmt.Errorf("shape %+v: %s does not apply", c.Shape, name)
			}
			a[i] = al
		}
		m[c.Shape] = Algos{Forward: a[0], WeightGrad: a[1], InputGrad: a[2]}
	}
	return m, nil
}

// Choose returns the algorithms of the passes of the convolution s when
// req is asked for: req itself where it applies (Im2col elsewhere; the
// direct kernels are granted even where they run in plain Go), or, for
// Auto, the one the tuner measured for this shape on this CPU when the
// wisdom file has it, else the rules of AutoAlgos.
func Choose(s Shape, req Algo) Algos {
	all := func(a Algo) Algos { return Algos{Forward: a, WeightGrad: a, InputGrad: a} }
	switch req {
	case Im2col:
		return all(Im2col)
	case Winograd, Direct:
		if Applies(s, req, true) {
			return all(req)
		}
		return all(Im2col)
	}
	if a, ok := tunedTable(false)[s]; ok {
		return a
	}
	return AutoAlgos(s, Fast())
}

// ChooseBF16 returns the bfloat16 algorithms of the passes of s for the
// requested algorithm: Im2colBF16 for Im2col (or Im2colBF16); DirectBF16
// wherever the direct kernels handle s for Direct (or DirectBF16; in plain
// Go without AVX512_BF16, for tests), else Im2colBF16; WinogradBF16 for
// Winograd (or WinogradBF16) on the 3x3 stride-1 padding-1 convolutions,
// else Im2colBF16; for the others
// the one the tuner measured for this shape on this CPU when the wisdom
// file's bfloat16 entry has it, else AutoAlgosBF16's choice.
func ChooseBF16(s Shape, req Algo) Algos {
	all := func(a Algo) Algos { return Algos{Forward: a, WeightGrad: a, InputGrad: a} }
	switch req {
	case Im2col, Im2colBF16:
		return all(Im2colBF16)
	case Direct, DirectBF16:
		if s.geom().directOK() {
			return all(DirectBF16)
		}
		return all(Im2colBF16)
	case Winograd, WinogradBF16:
		if s.geom().winogradShape() {
			return all(WinogradBF16)
		}
		return all(Im2colBF16)
	}
	if a, ok := tunedTable(true)[s]; ok {
		return a
	}
	return AutoAlgosBF16(s, FastBF16())
}
