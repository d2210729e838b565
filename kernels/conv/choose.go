package conv

import (
	"fmt"
	"os"
	"sync"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
)

// WisdomEntry is the name of the convolutions' entry in the wisdom file
// (internal/wisdom): for each tuned shape, the algorithm of each pass.
const WisdomEntry = "nn.conv"

// Choice is the algorithm ("im2col", "winograd" or "direct") of each pass
// of a shape, and the fastest call of each (milliseconds of CPU time, all
// threads) that decided it: one element of the wisdom entry.
type Choice struct {
	Shape
	Forward    string     `json:"forward"`
	WeightGrad string     `json:"weight_grad"`
	InputGrad  string     `json:"input_grad"`
	MS         [3]float64 `json:"ms"`
}

// Entry is the entry WisdomEntry holds for a CPU.
type Entry struct {
	ISA     string   `json:"isa"` // the level (cpu.ISA) it was tuned at; applied only at the same level
	Threads int      `json:"threads"`
	Choices []Choice `json:"choices"`
	Date    string   `json:"date"`
}

// AlgoNames maps the names of the wisdom file to the algorithms.
var AlgoNames = map[string]Algo{"im2col": Im2col, "winograd": Winograd, "direct": Direct}

// tuned returns the tuned choices of this CPU at this level, read once
// from the wisdom file; a file or entry that cannot be used is reported in
// one line on stderr and the rules of AutoAlgos apply.
var tuned = sync.OnceValue(func() map[Shape]Algos {
	var e Entry
	found, _, err := wisdom.Load(cpu.Detect().Key(), WisdomEntry, &e)
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: %v; convolutions use their built-in rules\n", err)
		return nil
	}
	if !found || e.ISA != cpu.ISA().String() {
		return nil
	}
	m, err := Table(e.Choices, Fast())
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: wisdom entry %s for this CPU: %v; convolutions use their built-in rules\n", WisdomEntry, err)
		return nil
	}
	return m
})

// Table turns choices into a lookup table, checking that each names
// algorithms that apply to its shape (direct ones only with the assembly
// kernels: fast).
func Table(choices []Choice, fast bool) (map[Shape]Algos, error) {
	m := make(map[Shape]Algos, len(choices))
	for _, c := range choices {
		var a [3]Algo
		for i, name := range []string{c.Forward, c.WeightGrad, c.InputGrad} {
			al, ok := AlgoNames[name]
			if !ok {
				return nil, fmt.Errorf("shape %+v: unknown algorithm %q", c.Shape, name)
			}
			if !Applies(c.Shape, al, fast) {
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
	if a, ok := tuned()[s]; ok {
		return a
	}
	return AutoAlgos(s, Fast())
}

// ChooseBF16 returns the bfloat16 algorithms of the passes of s for the
// requested algorithm: Im2colBF16 for Im2col (or Im2colBF16); DirectBF16
// wherever the direct kernels handle s for Direct (or DirectBF16; in plain
// Go without AVX512_BF16, for tests), else Im2colBF16; for the others
// AutoAlgosBF16's choice.
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
	}
	return AutoAlgosBF16(s, FastBF16())
}
