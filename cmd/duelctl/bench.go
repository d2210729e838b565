package main

import "github.com/urfave/cli/v2"

// benchCommand groups the benchmarks; each subcommand lives in bench_*.go.
func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure the engine's speed (GEMM, training step, data pipeline, DUEL memory update, t-SNE) and show the CPU it runs on",
		Subcommands: []*cli.Command{
			benchGemmCommand(),
			benchTuneCommand(),
			benchDataCommand(),
			benchStepCommand(),
			benchDuelCommand(),
			benchTSNECommand(),
			benchCPUCommand(),
		},
	}
}
