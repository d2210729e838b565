package nn

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/scratch"
	"github.com/duel-ssl/duel/internal/wisdom"
	"github.com/duel-ssl/duel/kernels/conv"
)

// ConvWisdomEntry is the name of the convolutions' entry in the wisdom
// file (internal/wisdom): for each tuned shape, the algorithm of each pass
// (conv.WisdomEntry, read by the CPU backend's choice, conv.Choose).
const ConvWisdomEntry = conv.WisdomEntry

// ConvShape is the geometry of a convolution call: batch, channels, input
// map, kernel, stride, padding, and whether the input is channel-major
// (conv.Shape).
type ConvShape = conv.Shape

// ConvChoice is the algorithm ("im2col", "winograd" or "direct") of each
// pass of a shape, and the fastest call of each (milliseconds of CPU time,
// all threads) that decided it (conv.Choice).
type ConvChoice = conv.Choice

// convTable turns choices into a lookup table (conv.Table).
func convTable(choices []ConvChoice, fast bool) (map[ConvShape]conv.Algos, error) {
	return conv.Table(choices, fast)
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
		sc := new(scratch.Free)
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
			pl = conv.CachedPlan(s.H, s.W, s.S)
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
					wu := winoKernels(sc, wd, s.Out, s.In)
					conv.WinogradForward(sc, s, wu, xd, yd)
					sc.Put(wu)
				},
				func() { conv.WinogradWeightGrad(sc, s, xd, dy, dw, false) },
				func() {
					wu := winoKernels(sc, wd, s.Out, s.In)
					conv.WinogradInputGrad(sc, s, wu, dy, dx, false)
					sc.Put(wu)
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
					t := cpuSeconds()
					passes[al][pass]()
					best[al][pass] = min(best[al][pass], cpuSeconds()-t)
				}
			}
		}
		ch := ConvChoice{Shape: s}
		names := make(map[ConvAlgo]string, len(conv.AlgoNames))
		for n, al := range conv.AlgoNames {
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
	e := conv.Entry{ISA: cpu.ISA().String(), Threads: runtime.GOMAXPROCS(0), Choices: choices, Date: time.Now().UTC().Format(time.RFC3339)}
	return wisdom.Store(cpu.Detect().Key(), ConvWisdomEntry, e)
}

// winoKernels returns the transformed kernels of the (out, in, 3, 3)
// weight w (conv.WinogradKernels) on a buffer from sc.
func winoKernels(sc *scratch.Free, w []float32, out, in int) []float32 {
	u := sc.Get(conv.WinogradKernelsLen(out, in))
	conv.WinogradKernels(u, w, out, in)
	return u
}
