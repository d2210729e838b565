package conv

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/scratch"
	"github.com/duel-ssl/duel/internal/wisdom"
)

// TuneOptions controls Tune.
type TuneOptions struct {
	Rounds   int       // alternating rounds per shape; 0 means 5
	Progress io.Writer // one line per shape, or nil
	Seed     uint64
	// BF16 measures the bfloat16 algorithms (Im2colBF16, DirectBF16,
	// WinogradBF16) instead of the float32 ones: the choices of
	// WisdomEntryBF16.
	BF16 bool
}

// Tune measures, for each shape, every algorithm that applies to each
// pass (forward, weight gradient, input gradient), alternating them for
// opts.Rounds rounds, and returns for each pass the algorithm of the
// built-in rules (AutoAlgos, AutoAlgosBF16) unless another took at least
// tuneMargin less time, then the fastest, by the least CPU time (all
// threads) of a call, which other processes disturb far less than wall
// time. The measurements use GOMAXPROCS threads, as training does.
// The weights are drawn as nn.NewConv2d draws them (uniform within
// 1/sqrt(fan-in)), from a generator seeded by opts.Seed. With opts.BF16 it
// measures the bfloat16 algorithms, named as in AlgoNamesBF16.
func Tune(shapes []Shape, opts TuneOptions) []Choice {
	rounds := opts.Rounds
	if rounds <= 0 {
		rounds = 5
	}
	r := rand.New(rand.NewPCG(opts.Seed, 0x636f6e76))
	fast := Fast()
	var out []Choice
	for _, s := range shapes {
		wd := make([]float32, s.Out*s.In*s.K*s.K)
		bound := 1 / math.Sqrt(float64(s.In*s.K*s.K))
		for i := range wd {
			wd[i] = float32((2*r.Float64() - 1) * bound)
		}
		xd, dy := make([]float32, s.N*s.In*s.H*s.W), make([]float32, s.N*s.Out*s.OutH()*s.OutW())
		for _, v := range [][]float32{xd, dy} {
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
		}
		run := newPassRun(s, wd, xd, dy)
		base, others, names := Im2col, []Algo{Winograd, Direct}, AlgoNames
		if opts.BF16 {
			base, others, names = Im2colBF16, []Algo{DirectBF16, WinogradBF16}, AlgoNamesBF16
		}
		algs := []Algo{base}
		for _, al := range others {
			if Applies(s, al, fast) {
				algs = append(algs, al)
			}
		}
		best := make(map[Algo]*[3]float64)
		for _, al := range algs {
			best[al] = &[3]float64{1e300, 1e300, 1e300}
		}
		for range rounds {
			for pass := range 3 {
				for _, al := range algs {
					t := cpuSeconds()
					run.run(al, pass)
					best[al][pass] = min(best[al][pass], cpuSeconds()-t)
				}
			}
		}
		ch := Choice{Shape: s}
		nameOf := make(map[Algo]string, len(names))
		for n, al := range names {
			nameOf[al] = n
		}
		rule := AutoAlgos(s, fast)
		if opts.BF16 {
			rule = AutoAlgosBF16(s, FastBF16())
		}
		for pass, dst := range []*string{&ch.Forward, &ch.WeightGrad, &ch.InputGrad} {
			times := make(map[Algo]float64, len(algs))
			for _, al := range algs {
				times[al] = best[al][pass]
			}
			win := pick(times, algs, [3]Algo{rule.Forward, rule.WeightGrad, rule.InputGrad}[pass])
			*dst = nameOf[win]
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

// FromRules returns how many of c's passes name another algorithm than
// the built-in rules give its shape (AutoAlgos, or AutoAlgosBF16 for a
// choice of the bfloat16 entry): 0 to 3.
func (c Choice) FromRules(bf16 bool) int {
	rule, names := AutoAlgos(c.Shape, Fast()), AlgoNames
	if bf16 {
		rule, names = AutoAlgosBF16(c.Shape, FastBF16()), AlgoNamesBF16
	}
	n := 0
	for i, name := range []string{c.Forward, c.WeightGrad, c.InputGrad} {
		if al, ok := names[name]; !ok || al != [3]Algo{rule.Forward, rule.WeightGrad, rule.InputGrad}[i] {
			n++
		}
	}
	return n
}

// tuneMargin is how much less time than the built-in rule's algorithm
// another must take on a pass before Tune chooses it. Tune times each pass
// alone, on operands it has just used, where a training step finds them
// in memory; differences smaller than this were as likely to reverse in
// the step: with every pass given to the fastest algorithm by any margin,
// a ResNet-18 bf16 step ran slower than with the rules (Zen 4;
// bench/RESULTS.md, "bfloat16 on the CPU").
const tuneMargin = 0.10

// pick returns the algorithm Tune keeps for a pass from the least times
// of algs (in the order measured): rule, unless another took at least
// tuneMargin less time, then the fastest of them (the first on a tie);
// the fastest of all when rule was not measured.
func pick(times map[Algo]float64, algs []Algo, rule Algo) Algo {
	fastest := algs[0]
	for _, al := range algs[1:] {
		if times[al] < times[fastest] {
			fastest = al
		}
	}
	t, ok := times[rule]
	if !ok || times[fastest] <= (1-tuneMargin)*t {
		return fastest
	}
	return rule
}

// SaveTuning stores choices as the convolutions' entry for this CPU in
// the wisdom file, for the next processes (this one keeps its choices). It
// returns the file's path, empty when wisdom is disabled, and the error a
// corrupt or foreign file gave before it was replaced, if any.
func SaveTuning(choices []Choice) (path string, replaced, err error) {
	return saveTuning(WisdomEntry, choices)
}

// SaveTuningBF16 is SaveTuning for the choices of Tune with
// TuneOptions.BF16: the entry WisdomEntryBF16.
func SaveTuningBF16(choices []Choice) (path string, replaced, err error) {
	return saveTuning(WisdomEntryBF16, choices)
}

// saveTuning stores choices as the wisdom file's entry of this CPU.
func saveTuning(entry string, choices []Choice) (path string, replaced, err error) {
	e := Entry{ISA: cpu.ISA().String(), Threads: runtime.GOMAXPROCS(0), Choices: choices, Date: time.Now().UTC().Format(time.RFC3339)}
	return wisdom.Store(cpu.Detect().Key(), entry, e)
}

// winoKernels returns the transformed kernels of the (out, in, 3, 3)
// weight w (WinogradKernels) on a buffer from sc.
func winoKernels(sc *scratch.Free, w []float32, out, in int) []float32 {
	u := sc.Get(WinogradKernelsLen(out, in))
	WinogradKernels(u, w, out, in)
	return u
}
