package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"
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
	Usage: "where to compute: cpu or cuda",
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

// checkDevice validates --device. Only the CPU backend exists in builds
// without a usable GPU; "cuda" then fails with a clear message.
func checkDevice(c *cli.Context) error {
	switch d := c.String("device"); d {
	case "cpu":
		return nil
	case "cuda":
		return fmt.Errorf("--device cuda: no usable CUDA device on this machine (use --device cpu)")
	default:
		return flagError("device", fmt.Sprintf("%q", d), "cpu or cuda")
	}
}
