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
// map, kernel, stride, padding, and whether the input is channel-major.
type ConvShape struct {
	N, In, Out, H, W, K, S, P int
	ChannelMajor              bool
}

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

// geom returns the convGeom of s.
func (s ConvShape) geom() convGeom {
	oh, ow := ConvOutSize(s.H, s.K, s.S, s.P), ConvOutSize(s.W, s.K, s.S, s.P)
	return convGeom{n: s.N, cin: s.In, h: s.H, w: s.W, cout: s.Out, k: s.K, s: s.S, p: s.P, oh: oh, ow: ow, xcm: s.ChannelMajor || s.N == 1}
}

// shapeOf returns the ConvShape of g.
func shapeOf(g convGeom) ConvShape {
	return ConvShape{N: g.n, In: g.cin, Out: g.cout, H: g.h, W: g.w, K: g.k, S: g.s, P: g.p, ChannelMajor: g.xcm}
}

// algoNames maps the names of the wisdom file to the algorithms.
var algoNames = map[string]ConvAlgo{"im2col": AlgoIm2col, "winograd": AlgoWinograd, "direct": AlgoDirect}

// tunedConvs returns the tuned choices of this CPU at this level, read
// once from the wisdom file; a file or entry that cannot be used is
// reported in one line on stderr and the rules of autoAlgos apply.
var tunedConvs = sync.OnceValue(func() map[ConvShape]convAlgos {
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
func convTable(choices []ConvChoice, fast bool) (map[ConvShape]convAlgos, error) {
	m := make(map[ConvShape]convAlgos, len(choices))
	for _, c := range choices {
		var a [3]ConvAlgo
		for i, name := range []string{c.Forward, c.WeightGrad, c.InputGrad} {
			al, ok := algoNames[name]
			if !ok {
				return nil, fmt.Errorf("shape %+v: unknown algorithm %q", c.ConvShape, name)
			}
			if !algoApplies(c.geom(), al, fast) {
				return nil, fmt.Errorf("shape %+v: %s does not apply", c.ConvShape, name)
			}
			a[i] = al
		}
		m[c.ConvShape] = convAlgos{fwd: a[0], dw: a[1], dx: a[2]}
	}
	return m, nil
}

// algoApplies reports whether al can run the passes of g.
func algoApplies(g convGeom, al ConvAlgo, fast bool) bool {
	switch al {
	case AlgoWinograd:
		return g.winogradShape()
	case AlgoDirect:
		return fast && g.directOK()
	}
	return true
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
		g := s.geom()
		c := NewConv2d(s.In, s.Out, s.K, s.S, s.P, false, r)
		a := NewArena()
		c.SetArena(a)
		wd := c.Weight.Value.Data()
		xd, dy := make([]float32, g.n*g.cin*g.h*g.w), make([]float32, g.n*g.cout*g.ohw())
		for _, v := range [][]float32{xd, dy} {
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
		}
		yd, dx, dw := make([]float32, len(dy)), make([]float32, len(xd)), make([]float32, len(wd))
		var pl *conv.Plan
		if g.directOK() {
			pl = c.directPlan(g)
		}
		// The passes of each algorithm.
		passes := map[ConvAlgo][3]func(){
			AlgoIm2col: {
				func() { c.gemmForward(g, wd, xd, yd) },
				func() { c.gemmWeightGrad(g, xd, dy, dw, false) },
				func() { c.gemmInputGrad(g, wd, dy, dx, false) },
			},
			AlgoWinograd: {
				func() {
					wu := c.winoKernels(wd, false)
					c.winoConv(g, wu, false, xd, yd, true, false)
					c.arena.putScratch(wu)
				},
				func() { c.winoWeightGrad(g, xd, dy, dw, false) },
				func() {
					wu := c.winoKernels(wd, false)
					c.inputGradWinograd(g, wu, dy, dx, false)
					c.arena.putScratch(wu)
				},
			},
			AlgoDirect: {
				func() { c.directForward(g, pl, wd, xd, yd) },
				func() { c.directWeightGrad(g, pl, xd, dy, dw, false) },
				func() { c.directInputGrad(g, pl, wd, dy, dx, false) },
			},
		}
		algs := []ConvAlgo{AlgoIm2col}
		for _, al := range []ConvAlgo{AlgoWinograd, AlgoDirect} {
			if algoApplies(g, al, fast) {
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
