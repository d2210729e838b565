// Command duelctl trains, evaluates and analyses self-supervised encoders
// with the DUEL method (Duplicate Elimination on an active memory).
//
// Run "duelctl --help" for the list of commands.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/train"
)

func main() {
	// The memory checks (train.MemoryNeeds) count what a run holds live:
	// the garbage collector must not let the heap grow to twice that.
	train.LimitHeap()
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run executes duelctl with args and returns the process exit code. Errors are
// printed as one line starting with "duelctl:"; a panic is reported the same
// way (with the stack only when DUELCTL_DEBUG is set), never as a trace.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "duelctl: internal error: %v (please report it; set DUELCTL_DEBUG=1 for the stack)\n", r)
			if os.Getenv("DUELCTL_DEBUG") != "" {
				stderr.Write(debug.Stack())
			}
			code = 2
		}
	}()
	stopProfile, err := startProfiles() // DUEL_CPU_PROFILE=file, DUEL_TRACE=file
	if err != nil {
		fmt.Fprintf(stderr, "duelctl: %v\n", err)
		return 1
	}
	app := newApp(stdout, stderr)
	err = app.Run(args)
	if perr := stopProfile(); perr != nil {
		fmt.Fprintf(stderr, "duelctl: %v\n", perr)
	}
	if err == nil {
		err = helpTopicError(app)
	}
	if perr := cuda.WriteEnvProfile(stderr); perr != nil { // DUEL_CUDA_PROFILE=1
		fmt.Fprintf(stderr, "duelctl: %s: %v\n", cuda.EnvProfile, perr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "duelctl: %v\n", err)
		return 1
	}
	return 0
}

// newApp builds the command tree. Each command lives in its own file.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:  "duelctl",
		Usage: "self-supervised learning on class-imbalanced data with the DUEL active memory",
		Description: "duelctl trains encoders (MoCoV2, SimCLR, BYOL, Barlow Twins, D-MoCo, D-SimCLR),\n" +
			"evaluates them, analyses their memory and replays feature streams through memory policies.\n" +
			"Every command accepts --json: one JSON object on the last line of stdout.",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		// Errors are printed once, by run.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			trainCommand(),
			embedCommand(),
			evalCommand(),
			analyzeCommand(),
			memoryCommand(),
			reproduceCommand(),
			dataCommand(),
			benchCommand(),
		},
	}
	checkUsage(app)
	return app
}
