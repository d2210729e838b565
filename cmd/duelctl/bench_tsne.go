package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/analysis"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/npy"
)

// benchTSNEResult is the --json object of duelctl bench tsne.
type benchTSNEResult struct {
	benchMachine
	N       int     `json:"n"`
	Dim     int     `json:"dim"`
	Method  string  `json:"method"`
	Theta   float64 `json:"theta,omitempty"`
	Iters   int     `json:"iters"`
	Seconds float64 `json:"seconds"`
	KL      float64 `json:"kl"`
}

func benchTSNECommand() *cli.Command {
	ts := analysis.DefaultTSNEConfig()
	cmd := &cli.Command{
		Name:  "tsne",
		Usage: "time analyze's t-SNE (PCA to 50 dimensions, then the embedding) on an .npy of rows or on generated clusters",
		Description: "Embeds --features (N x D float32 or float64 .npy), or --n rows of dimension --dim drawn around\n" +
			"--classes random centres (seeded), with analyze's t-SNE settings, and reports the seconds (PCA\n" +
			"included) and the final KL divergence. bench/tsne_sklearn.py runs scikit-learn's TSNE on the\n" +
			"same rows in the same script and prints the ratios.\n" + benchMachineHelpCPU,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "features", Usage: "N x D .npy of rows to embed (default: generated clusters)"},
			&cli.IntFlag{Name: "n", Value: 1000, Usage: "generated rows (without --features)"},
			&cli.IntFlag{Name: "dim", Value: 512, Usage: "dimension of the generated rows"},
			&cli.IntFlag{Name: "classes", Value: 10, Usage: "clusters of the generated rows"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the generated rows"},
			&cli.IntFlag{Name: "iters", Value: ts.Iterations, Usage: "iterations"},
			&cli.Float64Flag{Name: "perplexity", Value: ts.Perplexity, Usage: "perplexity"},
			cpuDeviceFlag,
			jsonFlag,
		},
		Action: runBenchTSNE,
	}
	cmd.Flags = append(cmd.Flags, tsneMethodFlags()...)
	return cmd
}

// maxTSNEIters bounds bench tsne's --iters: a typo such as 1e9 would
// otherwise hold the machine for years (scikit-learn's default is 1000).
const maxTSNEIters = 100000

func runBenchTSNE(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only, see --help)", c.Args().First())
	}
	if err := checkCPUOnly(c, "analyze's PCA and t-SNE compute on the CPU whatever the run's device"); err != nil {
		return err
	}
	cfg := analysis.DefaultTSNEConfig()
	if err := setTSNEMethod(c, &cfg); err != nil {
		return err
	}
	cfg.Iterations, cfg.Perplexity = c.Int("iters"), c.Float64("perplexity")
	switch {
	case cfg.Iterations <= 0 || cfg.Iterations > maxTSNEIters:
		return flagError("iters", cfg.Iterations, fmt.Sprintf("an integer in [1, %d]", maxTSNEIters))
	case !(cfg.Perplexity > 0) || math.IsInf(cfg.Perplexity, 0):
		return flagError("perplexity", cfg.Perplexity, "a finite number > 0")
	}
	x, n, d, err := benchTSNERows(c)
	if err != nil {
		return err
	}
	if err := checkTSNEMemory(cfg.Method, n); err != nil {
		return err
	}
	bar := progressBar(c, cfg.Iterations, "t-SNE")
	cfg.Progress = func(it int) {
		if bar != nil && it%10 == 0 {
			bar.Set(it)
		}
	}
	start := time.Now()
	res, err := analysis.TSNE(x, n, d, cfg)
	finishBar(bar)
	if err != nil {
		return err
	}
	out := benchTSNEResult{benchMachine: newBenchMachine(nil), N: n, Dim: d, Method: cfg.Method.String(), Iters: cfg.Iterations, Seconds: time.Since(start).Seconds(), KL: res.KL}
	if cfg.Method == analysis.TSNEBarnesHut {
		out.Theta = cfg.Theta
	}
	out.benchMachine.write(c.App.Writer)
	fmt.Fprintf(c.App.Writer, "t-SNE (%s) of %d rows of dimension %d, %d iterations: %s (PCA included), KL %.4f\n", out.Method, n, d, out.Iters, fmtMS(out.Seconds*1e3), out.KL)
	return emitJSON(c, out)
}

// benchTSNERows returns --features' rows, or the generated ones: row i
// around centre i mod classes (centres N(0, 0.25) a coordinate, noise
// N(0, 1)).
func benchTSNERows(c *cli.Context) ([]float32, int, int, error) {
	if path := c.String("features"); path != "" {
		arr, err := npy.ReadFile(path)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("--features: %w", err)
		}
		x, n, d, err := arr.Float32Matrix()
		if err != nil {
			return nil, 0, 0, fmt.Errorf("--features %s: %w", path, err)
		}
		if n < 2 || d < 1 {
			return nil, 0, 0, fmt.Errorf("--features %s: shape %v, expected at least 2 rows of at least 1 value", path, arr.Shape)
		}
		return x, n, d, nil
	}
	n, d, k := c.Int("n"), c.Int("dim"), c.Int("classes")
	switch {
	case n < 2 || n > 1<<20:
		return nil, 0, 0, flagError("n", n, "an integer in [2, 1048576]")
	case d < 1 || d > 1<<16:
		return nil, 0, 0, flagError("dim", d, "an integer in [1, 65536]")
	case k < 1 || k > n:
		return nil, 0, 0, flagError("classes", k, fmt.Sprintf("an integer in [1, --n = %d]", n))
	}
	if err := train.CheckMemory(train.MemoryNeed{Flag: "n", Got: n, Bytes: 4 * float64(n) * float64(d), What: fmt.Sprintf("for %d generated rows of dimension %d", n, d)}); err != nil {
		return nil, 0, 0, err
	}
	r := rand.New(rand.NewPCG(c.Uint64("seed"), 0x74736e65))
	centres := make([]float64, k*d)
	for i := range centres {
		centres[i] = 0.5 * r.NormFloat64()
	}
	x := make([]float32, n*d)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x[i*d+j] = float32(centres[(i%k)*d+j] + r.NormFloat64())
		}
	}
	return x, n, d, nil
}
