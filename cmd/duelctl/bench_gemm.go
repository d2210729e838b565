package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/kernels/gemm"
)

func benchGemmCommand() *cli.Command {
	return &cli.Command{
		Name:  "gemm",
		Usage: "time C = A*B (float32, row-major) and report GFLOP/s",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "m", Value: 1024, Usage: "rows of A and C"},
			&cli.IntFlag{Name: "n", Value: 1024, Usage: "columns of B and C"},
			&cli.IntFlag{Name: "k", Value: 1024, Usage: "columns of A, rows of B"},
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
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			cm := make([]float32, m*n)
			for i := range a {
				a[i] = float32(i%7) - 3
			}
			for i := range b {
				b[i] = float32(i%5) - 2
			}
			gemm.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, cm, n)
			reps := 0
			start := time.Now()
			for time.Since(start) < time.Second || reps < 3 {
				gemm.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, cm, n)
				reps++
			}
			sec := time.Since(start).Seconds() / float64(reps)
			gflops := 2 * float64(m) * float64(n) * float64(k) / sec / 1e9
			fmt.Fprintf(c.App.Writer, "sgemm %dx%dx%d: %.1f GFLOP/s (%.3f ms, %d reps, %d threads)\n",
				m, n, k, gflops, sec*1e3, reps, gemm.Threads())
			return emitJSON(c, map[string]any{"gflops": gflops, "isa": gemm.ISA(), "threads": gemm.Threads()})
		},
	}
}
