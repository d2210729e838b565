package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/tensor"
)

// gemmVariants are the transpositions --trans accepts: op(A) and op(B).
var gemmVariants = map[string][2]bool{
	"nn": {false, false}, "nt": {false, true}, "tn": {true, false}, "tt": {true, true},
}

func benchGemmCommand() *cli.Command {
	return &cli.Command{
		Name:  "gemm",
		Usage: "time C = op(A)*op(B) (float32, row-major) and report GFLOP/s",
		Description: "Runs the multiply for at least --seconds (and 3 times) after one warm-up call and\n" +
			"reports the mean (\"gflops\") and the fastest single call (\"gflops_best\", the least\n" +
			"disturbed by other processes). --trans all also times the transposed variants (NT,\n" +
			"TN, TT); the JSON then carries their mean GFLOP/s in \"variants\". \"gflops\" is\n" +
			"always the first variant timed (NN by default). Times print in ns, µs, ms or s (3\n" +
			"significant digits); on --device cuda \"ms\" is the first variant's time per product.\n" +
			benchMachineHelp,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "m", Value: 1024, Usage: "rows of op(A) and C"},
			&cli.IntFlag{Name: "n", Value: 1024, Usage: "columns of op(B) and C"},
			&cli.IntFlag{Name: "k", Value: 1024, Usage: "columns of op(A), rows of op(B)"},
			&cli.StringFlag{Name: "trans", Value: "nn", Usage: "transpositions of A and B: nn, nt, tn, tt or all"},
			&cli.Float64Flag{Name: "seconds", Value: 1, Usage: fmt.Sprintf("minimum time per variant, at most %d", maxBenchSeconds)},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu (kernels/gemm), or cuda: the GPU's product in --precision, device time between events"},
			precisionFlag,
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			m, n, k := c.Int("m"), c.Int("n"), c.Int("k")
			for _, f := range []struct {
				name string
				v    int
			}{{"m", m}, {"n", n}, {"k", k}} {
				if f.v <= 0 {
					return flagError(f.name, f.v, "a positive integer")
				}
			}
			if float64(m)*float64(k)+float64(k)*float64(n)+float64(m)*float64(n) > 1<<31 {
				return fmt.Errorf("-m %d -n %d -k %d: the three matrices need more than 8 GiB, expected smaller sizes", m, n, k)
			}
			secs := c.Float64("seconds")
			if !(secs > 0) || secs > maxBenchSeconds {
				return flagError("seconds", secs, fmt.Sprintf("a positive number of at most %d", maxBenchSeconds))
			}
			names := []string{strings.ToLower(c.String("trans"))}
			if names[0] == "all" {
				names = []string{"nn", "nt", "tn", "tt"}
			} else if _, ok := gemmVariants[names[0]]; !ok {
				return flagError("trans", fmt.Sprintf("%q", c.String("trans")), "nn, nt, tn, tt or all")
			}
			if dev := c.String("device"); dev == "cuda" {
				return benchGemmCUDA(c, m, n, k, names, secs)
			} else if dev != "cpu" {
				return flagError("device", fmt.Sprintf("%q", dev), "cpu or cuda")
			} else if err := useCPUPrecision(c); err != nil {
				return err
			}
			product, label, isa := gemm.Func(gemm.Sgemm), "sgemm", gemm.ISA()
			if pr, _ := tensor.CPUPrecisions(); pr == "bf16" {
				product, label, isa = gemm.SgemmBF16, "sgemm-bf16", gemm.ISABF16()
			}
			mach := newBenchMachine(nil)
			mach.write(c.App.Writer)
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			cm := make([]float32, m*n)
			for i := range a {
				a[i] = float32(i%7) - 3
			}
			for i := range b {
				b[i] = float32(i%5) - 2
			}
			variants := map[string]float64{}
			var best []float64 // fastest single call of the first variant
			for _, name := range names {
				tr := gemmVariants[name]
				lda, ldb := k, n
				if tr[0] {
					lda = m
				}
				if tr[1] {
					ldb = k
				}
				run := func() { product(tr[0], tr[1], m, n, k, 1, a, lda, b, ldb, 0, cm, n) }
				run()
				reps := 0
				fastest := math.Inf(1)
				start := time.Now()
				for time.Since(start).Seconds() < secs || reps < 3 {
					t0 := time.Now()
					run()
					fastest = min(fastest, time.Since(t0).Seconds())
					reps++
				}
				sec := time.Since(start).Seconds() / float64(reps)
				flop := 2 * float64(m) * float64(n) * float64(k)
				gflops := flop / sec / 1e9
				variants[strings.ToUpper(name)] = gflops
				if len(best) == 0 {
					best = append(best, flop/fastest/1e9)
				}
				fmt.Fprintf(c.App.Writer, "%s %s %dx%dx%d: %s GFLOP/s (%s per call, mean of %d calls; fastest call %s = %s GFLOP/s; %d threads, %s)\n",
					label, strings.ToUpper(name), m, n, k, fmtRate(gflops), fmtMS(sec*1e3), reps, fmtMS(fastest*1e3), fmtRate(flop/fastest/1e9), gemm.Threads(), isa)
			}
			out := map[string]any{
				"gflops":      variants[strings.ToUpper(names[0])],
				"gflops_best": best[0],
				"isa":         isa,
				"threads":     gemm.Threads(),
			}
			mach.addTo(out) // cpu, cpu_key, microarch, logical_cpus, cpu_isa, tuning
			if len(names) > 1 {
				out["variants"] = variants
			}
			return emitJSON(c, out)
		},
	}
}

// benchGemmCUDA times the variants names on the GPU (cuda.TimeGemm) in
// --precision.
func benchGemmCUDA(c *cli.Context, m, n, k int, names []string, secs float64) error {
	if err := cuda.Available(); err != nil {
		return fmt.Errorf("--device cuda: %w", err)
	}
	d, err := cuda.Default()
	if err != nil {
		return fmt.Errorf("--device cuda: %w", err)
	}
	d.LogSlowLoads(c.App.ErrWriter) // the driver's JIT of the GEMM kernels on a machine's first use
	mach := newBenchMachine(d)
	mach.write(c.App.Writer)
	p, err := cuda.ParsePrecision(c.String("precision"))
	if err != nil {
		return flagError("precision", fmt.Sprintf("%q", c.String("precision")), "fp32, tf32 or bf16")
	}
	variants := map[string]float64{}
	var first cuda.GemmTiming
	for i, name := range names {
		tr := gemmVariants[name]
		r, err := cuda.TimeGemm(m, n, k, tr[0], tr[1], p, time.Duration(secs*float64(time.Second)))
		if err != nil {
			return err
		}
		if i == 0 {
			first = r
		}
		variants[strings.ToUpper(name)] = r.GFLOPS
		peak := ""
		if r.Peak > 0 {
			peak = fmt.Sprintf("; %s%% of the device's %.1f TFLOP/s %s peak", sig3(100*r.GFLOPS/r.Peak), r.Peak/1e3, r.Precision)
		}
		fmt.Fprintf(c.App.Writer, "%s %s %dx%dx%d: %s GFLOP/s (%s per product, device time, %d products; %s, %s%s)\n",
			r.Kernel, strings.ToUpper(name), m, n, k, fmtRate(r.GFLOPS), fmtMS(r.PerCall.Seconds()*1e3), r.Reps, r.Precision, r.Device, peak)
		if r.Candidates != nil {
			fmt.Fprintf(c.App.Writer, "  chosen by measuring on this GPU (median device time of %d products each): %s\n", cuda.GemmTuneSamples, cuda.KernelTimes(r.Candidates))
		}
	}
	out := map[string]any{
		"gflops":    first.GFLOPS,
		"device":    first.Device,
		"precision": first.Precision.String(),
		"kernel":    first.Kernel,
		"ms":        first.PerCall.Seconds() * 1e3,
	}
	if first.Peak > 0 {
		out["peak_gflops"] = first.Peak
		out["of_peak"] = first.GFLOPS / first.Peak
	}
	if len(names) > 1 {
		out["variants"] = variants
	}
	if first.Candidates != nil {
		ms := map[string]float64{}
		for name, d := range first.Candidates {
			ms[name] = d.Seconds() * 1e3
		}
		out["candidates_ms"] = ms
	}
	mach.addTo(out) // the CPU, and "gpu" (as "device")
	return emitJSON(c, out)
}
