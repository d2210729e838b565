package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/stat"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/kernels/igemm"
)

// benchDuelCommand times one DUEL memory update, fast path against the
// reference, in one process.
func benchDuelCommand() *cli.Command {
	return &cli.Command{
		Name:  "duel",
		Usage: "time one DUEL memory update: the fast path against the paper's pseudocode transcribed, in the same process",
		Description: "Fills a memory of --size random unit rows of --dim values, then offers --updates fresh random\n" +
			"batches of --batch rows to the fast DUEL policy and --reference-updates to the line-by-line\n" +
			"transcription of the paper's Appendix D (full (K+B) x (K+B) score matrix per update). Both make\n" +
			"the same evictions; the speed-up is the ratio of their median update times. For the comparison\n" +
			"with the pseudocode in PyTorch, see bench/duel_pytorch.py.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "size", Value: 2048, Usage: "memory size K"},
			&cli.IntFlag{Name: "batch", Value: 256, Usage: "rows per update B"},
			&cli.IntFlag{Name: "dim", Value: 256, Usage: "row length Z"},
			&cli.IntFlag{Name: "updates", Value: 50, Usage: "timed updates of the fast path"},
			&cli.IntFlag{Name: "reference-updates", Value: 3, Usage: "timed updates of the reference (0: skip it)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the random rows"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			k, b, z := c.Int("size"), c.Int("batch"), c.Int("dim")
			n, nr := c.Int("updates"), c.Int("reference-updates")
			switch {
			case k <= 0:
				return flagError("size", k, "a positive integer")
			case b <= 0:
				return flagError("batch", b, "a positive integer")
			case z <= 0 || z > 1<<16:
				return flagError("dim", z, "an integer in 1..65536")
			case n <= 0:
				return flagError("updates", n, "a positive integer")
			case nr < 0:
				return flagError("reference-updates", nr, "0 or a positive integer")
			}
			rng := rand.New(rand.NewPCG(c.Uint64("seed"), 7))
			gauss := func(rows int) []float32 {
				v := make([]float32, rows*z)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			init := gauss(k)
			batches := make([][]float32, n+1)
			for i := range batches {
				batches[i] = gauss(b)
			}
			fast, err := timeDUEL(memory.NewDUEL(memory.Protected), init, batches, k, z)
			if err != nil {
				return err
			}
			res := map[string]any{"size": k, "batch": b, "dim": z, "updates": n,
				"fast_ms": median(fast), "fast_mean_ms": stat.Mean(fast, nil),
				"isa": gemm.ISA(), "int16_kernel": igemm.Kernel()}
			fmt.Fprintf(c.App.Writer, "DUEL update (K=%d, B=%d, Z=%d, %s, int16 %s): fast median %.3f ms, mean %.3f ms over %d updates\n",
				k, b, z, gemm.ISA(), igemm.Kernel(), median(fast), stat.Mean(fast, nil), n)
			if nr > 0 {
				ref, err := timeDUEL(memory.NewDUELReference(memory.Protected), init, batches[:min(nr, n)+1], k, z)
				if err != nil {
					return err
				}
				res["reference_ms"], res["speedup"] = median(ref), median(ref)/median(fast)
				fmt.Fprintf(c.App.Writer, "reference (the paper's pseudocode in Go): median %.2f ms over %d updates: %.1fx\n",
					median(ref), len(ref), median(ref)/median(fast))
			}
			return emitJSON(c, res)
		},
	}
}

// timeDUEL fills a memory managed by p with the rows init, offers it
// batches[0] untimed (the policy's carried state is built then), and
// returns the wall time of each later batch's update, in ms.
func timeDUEL(p memory.Policy, init []float32, batches [][]float32, k, z int) ([]float64, error) {
	m, err := memory.New(k, z, p)
	if err != nil {
		return nil, fmt.Errorf("bench duel: %w", err)
	}
	if _, err := m.Add(init, nil, nil, 0); err != nil {
		return nil, fmt.Errorf("bench duel: %w", err)
	}
	var ms []float64
	for i, batch := range batches {
		start := time.Now()
		if _, err := m.Add(batch, nil, nil, i+1); err != nil {
			return nil, fmt.Errorf("bench duel: %w", err)
		}
		if i > 0 {
			ms = append(ms, time.Since(start).Seconds()*1e3)
		}
	}
	return ms, nil
}
