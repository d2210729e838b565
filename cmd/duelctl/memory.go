package main

import "github.com/urfave/cli/v2"

// memoryCommand groups the tools around the active memory; each subcommand
// lives in memory_*.go.
func memoryCommand() *cli.Command {
	return &cli.Command{
		Name:  "memory",
		Usage: "offline tools for the active memory and its policies",
		Subcommands: []*cli.Command{
			memoryReplayCommand(),
			memoryStreamCommand(),
		},
	}
}
