package nn

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
	"github.com/duel-ssl/duel/kernels/conv"
)

// ConvWisdomEntry is the name of the convolutions' entry in the wisdom
// file (internal/wisdom): for each tuned shape, the algorithm of each pass.
const ConvWisdomEntry = "nn.conv"

// ConvShape is the geometry of a convolution call: batch, channels, input
// map, kernel, stride, padding, and whether the input is channel-major
// (conv.Shape).
type ConvShape = conv.Shape

// ConvChoice is the algorithm ("im2col", "winograd" or "direct") of each
// pass of a shape, and the fastest call of each (milliseconds of CPU time,
// all threads) that decided it.
type ConvChoice struct {
	ConvShape
	Forward    string     `json:"forward"`
	WeightGrad string     `json:"weight_grad"`
	InputGrad  string     `json:"input_grad"`
	MS         [3]float64 `json:"ms"`
}

// convEntry is the entry ConvWisdomEntry holds for a CPU.
type convEntry struct {
	ISA     string       `json:"isa"` // the level (cpu.ISA) it was tuned at; applied only at the same level
	Threads int          `json:"threads"`
	Choices []ConvChoice `json:"choices"`
	Date    string       `json:"date"`
}

// algoNames maps the names of the wisdom file to the algorithms.
var algoNames = map[string]ConvAlgo{"im2col": AlgoIm2col, "winograd": AlgoWinograd, "direct": AlgoDirect}

// tunedConvs returns the tuned choices of this CPU at this level, read
// once from the wisdom file; a file or entry that cannot be used is
// reported in one line on stderr and the rules of conv.AutoAlgos apply.
var tunedConvs = sync.OnceValue(func() map[ConvShape]conv.Algos {
	var e convEntry
	found, _, err := wisdom.Load(cpu.Detect().Key(), ConvWisdomEntry, &e)
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: %v; convolutions use their built-in rules\n", err)
		return nil
	}
	if !found || e.ISA != cpu.ISA().String() {
		return nil
	}
	m, err := convTable(e.Choices, conv.Fast())
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: wisdom entry %s for this CPU: %v; convolutions use their built-in rules\n", ConvWisdomEntry, err)
		return nil
	}
	return m
})

// convTable turns choices into a lookup table, checking that each names
// algorithms that apply to its shape (direct ones only with the assembly
// kernels: fast).
func convTable(choices []ConvChoice, fast bool) (map[ConvShape]conv.Algos, error) {
	m := make(map[ConvShape]conv.Algos, len(choices))
	for _, c := range choices {
		var a [3]ConvAlgo
		for i, name := range []string{c.Forward, c.WeightGrad, c.InputGrad} {
			al, ok := algoNames[name]
			if !ok {
				return nil, fmt.Errorf("shape %+v: unknown algorithm %q", c.ConvShape, name)
			}
			if !conv.Applies(c.ConvShape, al, fast) {
				return nil, fmt.Errorf("shape %+v: %s does not apply", c.ConvShape, name)
			}
			a[i] = al
		}
		m[c.ConvShape] = conv.Algos{Forward: a[0], WeightGrad: a[1], InputGrad: a[2]}
	}
	return m, nil
}

// ConvTuneOptions controls TuneConvs.
type ConvTuneOptions struct {
	Rounds   int       // alternating rounds per shape; 0 means 5
	Progress io.Writer // one line per shape, or nil
	Seed     uint64
}

// TuneConvs measures, for each shape, every algorithm that applies to each
// pass (forward, weight gradient, input gradient), alternating them for
// opts.Rounds rounds, and returns the fastest of each pass by the least
// CPU time (all threads) of a call, which other processes disturb far less
// than wall time. The measurements use GOMAXPROCS threads, as training does.
func TuneConvs(shapes []ConvShape, opts ConvTuneOptions) []ConvChoice {
	rounds := opts.Rounds
	if rounds <= 0 {
		rounds = 5
	}
	r := rand.New(rand.NewPCG(opts.Seed, 0x636f6e76))
	fast := conv.Fast()
	var out []ConvChoice
	for _, s := range shapes {
		c := NewConv2d(s.In, s.Out, s.K, s.S, s.P, false, r)
		a := NewArena()
		c.SetArena(a)
		sc := a.kernelScratch()
		wd := c.Weight.Value.Data()
		xd, dy := make([]float32, s.N*s.In*s.H*s.W), make([]float32, s.N*s.Out*s.OutH()*s.OutW())
		for _, v := range [][]float32{xd, dy} {
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
		}
		yd, dx, dw := make([]float32, len(dy)), make([]float32, len(xd)), make([]float32, len(wd))
		var pl *conv.Plan
		if conv.Applies(s, AlgoDirect, true) {
			pl = c.directPlan(s)
		}
		// The passes of each algorithm.
		passes := map[ConvAlgo][3]func(){
			AlgoIm2col: {
				func() { conv.Im2colForward(sc, s, wd, xd, yd) },
				func() { conv.Im2colWeightGrad(sc, s, xd, dy, dw, false) },
				func() { conv.Im2colInputGrad(sc, s, wd, dy, dx, false) },
			},
			AlgoWinograd: {
				func() {
					wu := c.winoKernels(wd, false)
					conv.WinogradForward(sc, s, wu, xd, yd)
					c.arena.putScratch(wu)
				},
				func() { conv.WinogradWeightGrad(sc, s, xd, dy, dw, false) },
				func() {
					wu := c.winoKernels(wd, false)
					conv.WinogradInputGrad(sc, s, wu, dy, dx, false)
					c.arena.putScratch(wu)
				},
			},
			AlgoDirect: {
				func() { conv.DirectForward(sc, s, pl, wd, xd, yd) },
				func() { conv.DirectWeightGrad(sc, s, pl, xd, dy, dw, false) },
				func() { conv.DirectInputGrad(sc, s, pl, wd, dy, dx, false) },
			},
		}
		algs := []ConvAlgo{AlgoIm2col}
		for _, al := range []ConvAlgo{AlgoWinograd, AlgoDirect} {
			if conv.Applies(s, al, fast) {
				algs = append(algs, al)
			}
		}
		best := make(map[ConvAlgo]*[3]float64)
		for _, al := range algs {
			best[al] = &[3]float64{1e300, 1e300, 1e300}
		}
		for range rounds {
			for pass := range 3 {
				for _, al := range algs {
					a.Reset()
					t := cpuSeconds()
					passes[al][pass]()
					best[al][pass] = min(best[al][pass], cpuSeconds()-t)
				}
			}
		}
		ch := ConvChoice{ConvShape: s}
		names := make(map[ConvAlgo]string, len(algoNames))
		for n, al := range algoNames {
			names[al] = n
		}
		for pass, dst := range []*string{&ch.Forward, &ch.WeightGrad, &ch.InputGrad} {
			win := AlgoIm2col
			for _, al := range algs {
				if best[al][pass] < best[win][pass] {
					win = al
				}
			}
			*dst = names[win]
			ch.MS[pass] = best[win][pass] * 1e3
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "conv %d->%d %dx%d k%d s%d batch %d: forward %s %.2f ms, weight gradient %s %.2f ms, input gradient %s %.2f ms\n",
				s.In, s.Out, s.H, s.W, s.K, s.S, s.N, ch.Forward, ch.MS[0], ch.WeightGrad, ch.MS[1], ch.InputGrad, ch.MS[2])
		}
		out = append(out, ch)
	}
	return out
}

// SaveConvTuning stores choices as the convolutions' entry for this CPU in
// the wisdom file, for the next processes (this one keeps its choices). It
// returns the file's path, empty when wisdom is disabled, and the error a
// corrupt or foreign file gave before it was replaced, if any.
func SaveConvTuning(choices []ConvChoice) (path string, replaced, err error) {
	e := convEntry{ISA: cpu.ISA().String(), Threads: runtime.GOMAXPROCS(0), Choices: choices, Date: time.Now().UTC().Format(time.RFC3339)}
	return wisdom.Store(cpu.Detect().Key(), ConvWisdomEntry, e)
}
