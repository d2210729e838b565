package gemm

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/proctime"
	"github.com/duel-ssl/duel/internal/wisdom"
)

// TuneOptions controls Tune.
type TuneOptions struct {
	Quick    bool      // fewer and smaller shapes, fewer calls: a few seconds
	Threads  int       // threads per call; 0 means runtime.GOMAXPROCS(0)
	Progress io.Writer // one line per measured candidate, or nil
}

// Candidate is one configuration Tune measured.
type Candidate struct {
	Tuning
	// GFLOPS is the geometric mean over the shapes of PerShape, the
	// figure candidates are ranked by: per shape, the flops over the least
	// CPU time (all threads) a call took, times the threads it ran on, i.e.
	// the GFLOP/s of the call had each thread had a core to itself. Other
	// processes taking turns on the cores disturb it far less than wall
	// time. Where the CPU time is not available it is the wall-time figure.
	GFLOPS   float64   `json:"gflops"`
	PerShape []float64 `json:"per_shape"`
	// WallGFLOPS is the geometric mean over the shapes of the GFLOP/s of
	// the fastest call by the clock.
	WallGFLOPS float64 `json:"wall_gflops"`
}

// TuneResult is what Tune measured and kept.
type TuneResult struct {
	CPU        string      `json:"cpu"` // internal/cpu's key of this CPU
	ISA        string      `json:"isa"` // the level the kernels were chosen at (cpu.ISA)
	Threads    int         `json:"threads"`
	Shapes     [][3]int    `json:"shapes"`     // (m, n, k) of C = A*B, neither transposed
	Calls      int         `json:"calls"`      // calls per candidate and shape; the fastest counts
	Derived    Candidate   `json:"derived"`    // as measured in the final (or in the first stage when there was none)
	Best       Candidate   `json:"best"`       // the winner (Source "tuned"), Derived's configuration when nothing beat it
	Candidates []Candidate `json:"candidates"` // every measurement, in order
}

// tuneMargin is how much faster (geometric mean) a candidate must be than
// the incumbent to replace it: less is within the noise of a loaded machine.
const tuneMargin = 1.03

// Shapes Tune measures: the square sizes and the convolution shapes of the
// engine's ResNets as GEMMs (bench/gemm_numpy.py has the same), smaller in
// the quick mode.
var (
	tuneShapes      = [][3]int{{1024, 1024, 1024}, {2048, 2048, 2048}, {2048, 256, 2304}, {512, 512, 4608}, {32768, 64, 576}, {64, 576, 32768}}
	tuneShapesQuick = [][3]int{{512, 512, 512}, {1024, 1024, 1024}, {64, 576, 8192}}
)

// Tune measures candidate micro-kernels and blockings of Sgemm on this
// machine and returns the fastest. It times single calls (C = A*B on
// random operands), the candidates of a stage alternating so that noise
// from other processes hits them alike, and keeps each call's fastest
// time. The stages: every kernel the level (cpu.ISA) allows, with its
// derived blocking; then, for the best kernel, kc in {derived, 256, 384,
// 512} with the other blocks derived from it; then ns halved and doubled;
// then mc halved and doubled. A candidate replaces the incumbent only when
// tuneMargin faster, and the last winner must beat the derived
// configuration again, in a final with twice the calls, to be kept. Tune changes nothing in this process: SaveTuning
// stores the result for the next ones. The pure-Go kernel alone has
// nothing to choose from and is not measured.
func Tune(o TuneOptions) TuneResult {
	if o.Quick {
		return tune(o, tuneShapesQuick, 7)
	}
	return tune(o, tuneShapes, 12)
}

// tune is Tune on the given shapes with calls calls per candidate and shape.
func tune(o TuneOptions, shapes [][3]int, calls int) TuneResult {
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	r := TuneResult{CPU: cpu.Detect().Key(), ISA: cpu.ISA().String(), Threads: threads, Shapes: shapes, Calls: calls}
	var kernels []*kernel
	level, _ := rank(r.ISA)
	for _, k := range available {
		if kr, _ := rank(k.name); k.name != "generic" && kr <= level {
			kernels = append(kernels, k)
		}
	}
	start := choose(available, r.ISA)
	if len(kernels) == 0 {
		r.Derived = Candidate{Tuning: tuningOf(start, "derived")}
		r.Best = r.Derived
		r.Best.Source = "tuned"
		return r
	}
	ops := tuneOperands(shapes)
	stage := func(ks []*kernel, n int) []Candidate {
		cs := measure(ks, shapes, ops, threads, n)
		for _, c := range cs {
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "%-13s mc=%-4d kc=%-4d nc=%-5d ns=%-4d %7.1f CPU-time GFLOP/s (%.1f by the clock)\n", c.Kernel, c.MC, c.KC, c.NC, c.NS, c.GFLOPS, c.WallGFLOPS)
			}
		}
		r.Candidates = append(r.Candidates, cs...)
		return cs
	}
	// Stage 1: the kernels, with their derived blockings.
	cs := stage(kernels, calls)
	best, bestC := start, cs[slices.Index(kernels, start)]
	r.Derived = bestC
	r.Derived.Source = "derived"
	for i, c := range cs {
		if c.GFLOPS > tuneMargin*bestC.GFLOPS {
			best, bestC = kernels[i], c
		}
	}
	// Stages 2-4: kc (the others derived from it), ns, mc, each against the
	// incumbent measured again beside the candidates.
	variants := []func(b blocking) []blocking{
		func(b blocking) []blocking {
			var out []blocking
			for _, kc := range []int{256, 384, 512} {
				if kc != b.kc {
					out = append(out, deriveWithKC(best.mr, best.nr, kc, machine))
				}
			}
			return out
		},
		func(b blocking) []blocking {
			return []blocking{b.withNS(b.ns/2, best.nr), b.withNS(2*b.ns, best.nr)}
		},
		func(b blocking) []blocking {
			return []blocking{b.withMC(b.mc/2, best.mr), b.withMC(2*b.mc, best.mr)}
		},
	}
	for _, vary := range variants {
		ks := []*kernel{best}
		for _, b := range vary(best.blocking) {
			if b.valid(best.mr, best.nr) && b != best.blocking {
				ks = append(ks, best.withBlocking(b))
			}
		}
		if len(ks) == 1 {
			continue
		}
		cs := stage(ks, calls)
		inc := cs[0]
		for i, c := range cs[1:] {
			if c.GFLOPS > tuneMargin*inc.GFLOPS {
				best, inc = ks[i+1], c
			}
		}
	}
	// The final: the winner against the derived configuration, with twice
	// the calls; the winner must beat it again.
	r.Best = r.Derived
	if best != start {
		cs := stage([]*kernel{start, best}, 2*calls)
		r.Derived.GFLOPS, r.Derived.PerShape, r.Derived.WallGFLOPS = cs[0].GFLOPS, cs[0].PerShape, cs[0].WallGFLOPS
		r.Best = r.Derived
		if cs[1].GFLOPS > tuneMargin*cs[0].GFLOPS {
			r.Best = cs[1]
		}
	}
	r.Best.Source = "tuned"
	return r
}

// withNS returns b with ns set to about ns, a multiple of nr, and nc
// rounded to a multiple of it.
func (b blocking) withNS(ns, nr int) blocking {
	b.ns = max(nr, ns/nr*nr)
	b.nc = max(b.ns, min(maxNC, b.nc)/b.ns*b.ns)
	return b
}

// withMC returns b with mc set to about mc, a multiple of mr.
func (b blocking) withMC(mc, mr int) blocking {
	b.mc = max(mr, mc/mr*mr)
	return b
}

// tuneOperands returns random A, B and C for each shape.
func tuneOperands(shapes [][3]int) [][3][]float32 {
	r := rand.New(rand.NewPCG(1, 2))
	ops := make([][3][]float32, len(shapes))
	for i, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for j, size := range []int{m * k, k * n, m * n} {
			ops[i][j] = make([]float32, size)
			for e := range ops[i][j] {
				ops[i][j][e] = 2*r.Float32() - 1
			}
		}
	}
	return ops
}

// measure times calls calls of each kernel on each shape, alternating the
// kernels (starting with a different one each round), and returns for each
// kernel its fastest call per shape, by CPU time and by the clock, as
// GFLOP/s and their geometric means (see Candidate).
func measure(ks []*kernel, shapes [][3]int, ops [][3][]float32, threads, calls int) []Candidate {
	bestCPU := make([][]time.Duration, len(ks))
	bestWall := make([][]time.Duration, len(ks))
	for i := range ks {
		bestCPU[i] = make([]time.Duration, len(shapes))
		bestWall[i] = make([]time.Duration, len(shapes))
		for j := range shapes {
			bestCPU[i][j], bestWall[i][j] = math.MaxInt64, math.MaxInt64
		}
	}
	_, haveCPU := proctime.CPU()
	for s, sh := range shapes {
		m, n, k := sh[0], sh[1], sh[2]
		a, b, c := ops[s][0], ops[s][1], ops[s][2]
		for _, kn := range ks { // warm-up: buffers, workers, pages
			sgemm(kn, problem{false, false, m, n, k, 1, a, k, b, n, 0, c, n, nil}, threads)
		}
		for rep := 0; rep < calls; rep++ {
			for j := range ks {
				i := (j + rep) % len(ks)
				c0, _ := proctime.CPU()
				t0 := time.Now()
				sgemm(ks[i], problem{false, false, m, n, k, 1, a, k, b, n, 0, c, n, nil}, threads)
				wall := time.Since(t0)
				c1, _ := proctime.CPU()
				bestWall[i][s] = min(bestWall[i][s], wall)
				if haveCPU {
					used := time.Duration(threadsFor(ks[i], &problem{m: m, n: n, k: k}, threads))
					bestCPU[i][s] = min(bestCPU[i][s], max(c1-c0, time.Microsecond)/used)
				}
			}
		}
	}
	out := make([]Candidate, len(ks))
	for i, kn := range ks {
		c := Candidate{Tuning: tuningOf(kn, "candidate")}
		logRank, logWall := 0.0, 0.0
		for s, sh := range shapes {
			flop := 2 * float64(sh[0]) * float64(sh[1]) * float64(sh[2])
			wall := flop / bestWall[i][s].Seconds() / 1e9
			gf := wall
			if haveCPU {
				gf = flop / bestCPU[i][s].Seconds() / 1e9
			}
			c.PerShape = append(c.PerShape, gf)
			logRank += math.Log(gf)
			logWall += math.Log(wall)
		}
		c.GFLOPS = math.Exp(logRank / float64(len(shapes)))
		c.WallGFLOPS = math.Exp(logWall / float64(len(shapes)))
		out[i] = c
	}
	return out
}

// SaveTuning stores r's winner as SGEMM's entry for this CPU in the wisdom
// file (internal/wisdom), for the next processes; this one keeps its
// configuration. It returns the file's path, empty when wisdom is disabled
// (DUEL_WISDOM=off), and the error a corrupt or foreign file gave before
// it was replaced, if any.
func SaveTuning(r TuneResult) (path string, replaced, err error) {
	b := r.Best
	e := tunedEntry{
		Kernel: b.Kernel, MC: b.MC, KC: b.KC, NC: b.NC, NS: b.NS,
		ISA: r.ISA, Threads: r.Threads, GFLOPS: b.GFLOPS, DerivedGFLOPS: r.Derived.GFLOPS,
		Shapes: r.Shapes, Date: time.Now().UTC().Format(time.RFC3339),
	}
	return wisdom.Store(r.CPU, WisdomEntry, e)
}
