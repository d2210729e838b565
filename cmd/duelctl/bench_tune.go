package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
	"github.com/duel-ssl/duel/kernels/gemm"
)

func benchTuneCommand() *cli.Command {
	return &cli.Command{
		Name:  "tune",
		Usage: "measure SGEMM's micro-kernels and blockings on this machine and keep the fastest in the wisdom file",
		Description: "Times C = A*B on the engine's GEMM shapes (the square sizes and the ResNet\n" +
			"convolutions; --quick: smaller shapes, fewer calls) for each micro-kernel the CPU\n" +
			"allows with its blocking derived from the caches, then for the best one kc, ns and\n" +
			"mc around it, candidates alternating, the fastest call counting. The winner (kept\n" +
			"only when 3% faster than the incumbent) is stored for this CPU in the wisdom file,\n" +
			"os.UserCacheDir()/duel/wisdom.json or the path in DUEL_WISDOM (DUEL_WISDOM=off:\n" +
			"measure, store nothing), and used by the next processes (duelctl bench gemm shows\n" +
			"\"source\": \"tuned\"). A different kc changes the order of the sums, so results\n" +
			"differ in the last bits from the untuned ones (and stay the same from run to run).\n" +
			"Run it on an otherwise idle machine: other processes make the choice noisy.\n\n" +
			"Candidates are ranked by CPU time, not wall time: their figure (\"gflops\" in the JSON,\n" +
			"\"CPU-time GFLOP/s\" in the text) is a call's flops over its process CPU time divided\n" +
			"by the threads it ran on, i.e. GFLOP per CPU-second times the threads: the GFLOP/s the\n" +
			"call would reach had each thread a core to itself. Other processes taking turns on the\n" +
			"cores disturb it far less than the clock, which is what a ranking needs; it is not the\n" +
			"rate a shared machine delivers. The derived and kept lines print the wall-clock GFLOP/s\n" +
			"of the fastest calls beside it (\"wall_gflops\", every candidate's in the JSON); duelctl\n" +
			"bench gemm measures by the clock.\n\n" +
			"The first line names the machine (\"cpu: ...\"), as every bench subcommand's does; the\n" +
			"JSON names it in \"cpu\", \"cpu_key\", \"microarch\", \"logical_cpus\", \"cpu_isa\" and\n" +
			"\"tuning\" (the SGEMM configuration this process ran with, before tuning).",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "quick", Usage: "smaller shapes and fewer calls (seconds instead of about a minute)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			info := cpu.Detect()
			w := c.App.Writer
			mach := newBenchMachine(nil)
			mach.write(w)
			fmt.Fprintf(w, "caches: L1d %s, L2 %s per core, L3 %s; %s\n", kib(info.L1D), kib(info.L2), kib(info.L3), fmaUnits(info.FMA512Units))
			fmt.Fprintln(w, "each candidate's fastest call, in CPU-time GFLOP/s (GFLOP per CPU-second x threads: the rate on idle cores, which ranks them):")
			r := gemm.Tune(gemm.TuneOptions{Quick: c.Bool("quick"), Progress: w})
			var shapes []string
			for _, s := range r.Shapes {
				shapes = append(shapes, fmt.Sprintf("%dx%dx%d", s[0], s[1], s[2]))
			}
			fmt.Fprintf(w, "measured %d candidates on %s (%d threads, fastest of %d calls each, geometric mean)\n",
				len(r.Candidates), strings.Join(shapes, " "), r.Threads, r.Calls)
			fmt.Fprintf(w, "derived: %s, %.1f CPU-time GFLOP/s (%.1f GFLOP/s by the clock)\nkept:    %s, %.1f CPU-time GFLOP/s (%.1f by the clock); %.2fx the derived's CPU-time figure\n",
				describeTuning(r.Derived.Tuning), r.Derived.GFLOPS, r.Derived.WallGFLOPS, describeTuning(r.Best.Tuning), r.Best.GFLOPS, r.Best.WallGFLOPS, ratio(r.Best.GFLOPS, r.Derived.GFLOPS))
			path, replaced, err := gemm.SaveTuning(r)
			if replaced != nil {
				fmt.Fprintf(c.App.ErrWriter, "duelctl: replaced an unusable wisdom file: %v\n", replaced)
			}
			if err != nil {
				return fmt.Errorf("saving the tuning: %w", err)
			}
			if path == "" {
				fmt.Fprintf(w, "%s=off: nothing stored\n", wisdom.Env)
			} else {
				fmt.Fprintf(w, "stored in %s (entry %s for CPU %s)\n", path, gemm.WisdomEntry, r.CPU)
			}
			out := map[string]any{
				"isa": r.ISA, "threads": r.Threads, "shapes": r.Shapes, "calls": r.Calls,
				"derived": r.Derived, "kept": r.Best, "candidates": r.Candidates,
				"wisdom": path, "stored": path != "",
			}
			mach.addTo(out) // "tuning": the configuration this process ran before tuning
			out["cpu_key"] = r.CPU
			return emitJSON(c, out)
		},
	}
}

// describeTuning writes t as "avx512 mc=140 kc=432 nc=4032 ns=288 (derived)".
func describeTuning(t gemm.Tuning) string {
	return fmt.Sprintf("%s mc=%d kc=%d nc=%d ns=%d (%s)", t.Kernel, t.MC, t.KC, t.NC, t.NS, t.Source)
}

// ratio returns a/b, or 0 when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
