package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/cuda"
)

// jsonFlag is the --json flag every command carries.
var jsonFlag = &cli.BoolFlag{
	Name:  "json",
	Usage: "print exactly one JSON object as the last line of stdout",
}

// deviceFlag is the --device flag of every command that computes.
var deviceFlag = &cli.StringFlag{
	Name:  "device",
	Value: "cpu",
	Usage: "where to compute: cpu or cuda (cuda opens libcuda.so.1, or the file the environment variable DUEL_CUDA_DRIVER names)",
}

// emitJSON writes v as one line of JSON on stdout when --json is set.
func emitJSON(c *cli.Context, v any) error {
	if !c.Bool("json") {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the JSON result: %w", err)
	}
	_, err = fmt.Fprintln(c.App.Writer, string(b))
	return err
}

// flagError reports a bad flag value: which flag, what was found, what was expected.
func flagError(flag string, found any, expected string) error {
	return fmt.Errorf("--%s: got %v, expected %s", flag, found, expected)
}

// checkDevice validates --device. "cuda" needs a usable GPU (cuda.Available
// says why there is none); the commands that take --device compute on the
// CPU in this version, so a usable GPU is reported rather than silently
// ignored.
func checkDevice(c *cli.Context) error {
	switch d := c.String("device"); d {
	case "cpu":
		return nil
	case "cuda":
		if err := cuda.Available(); err != nil {
			return fmt.Errorf("--device cuda: %w", err)
		}
		return fmt.Errorf("--device cuda: %s computes on the CPU in this version (the CUDA backend passes its kernel tests but is not wired into this command yet); use --device cpu", c.Command.FullName())
	default:
		return flagError("device", fmt.Sprintf("%q", d), "cpu or cuda")
	}
}
