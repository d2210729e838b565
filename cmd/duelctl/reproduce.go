package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/reproduce"
)

func reproduceCommand() *cli.Command {
	return &cli.Command{
		Name:  "reproduce",
		Usage: "train and linear-probe the paper's experiment grid (Table 1, Table 2) at a chosen scale",
		Description: "Every (method, rho_max, seed) of the preset's grid is one `duelctl train` run in\n" +
			"OUT/runs/<method>-rho<r>-seed<s>, followed by the linear probe of Appendix E on its frozen\n" +
			"backbone. OUT/results.json and OUT/table.md hold the tables in the paper's layout (mean ± std over\n" +
			"seeds). Running the same command again skips finished runs and resumes interrupted ones.\n\n" +
			"Presets: " + presetList(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "preset", Usage: "the grid: " + strings.Join(reproduce.Names(), ", "), Required: true},
			&cli.StringFlag{Name: "out", Usage: "output directory (runs/, results.json, table.md)", Required: true},
			&cli.IntFlag{Name: "seeds", Usage: "seeds per cell (0 = the preset's: 3 for table1-paper, else 1)"},
			&cli.IntFlag{Name: "steps", Usage: "training steps per run (0 = the training preset's)"},
			&cli.StringFlag{Name: "methods", Usage: "comma-separated methods instead of the preset's (e.g. moco,dmoco)"},
			&cli.StringFlag{Name: "rho", Usage: "comma-separated rho_max values instead of the preset's (e.g. 0.5,0.75)"},
			&cli.IntFlag{Name: "probe-epochs", Usage: "linear-probe epochs (0 = the preset's: 100, Appendix E)"},
			&cli.IntFlag{Name: "probe-limit", Value: -1, Usage: "images per split for the probe (-1 = the preset's, 0 = whole splits)"},
			deviceFlag,
			jsonFlag,
		},
		Action: runReproduce,
	}
}

func presetList() string {
	var b strings.Builder
	for _, n := range reproduce.Names() {
		g, _ := reproduce.Lookup(n)
		fmt.Fprintf(&b, "\n  %-13s %s", n, g.Description)
	}
	return b.String()
}

func runReproduce(c *cli.Context) error {
	if err := checkDevice(c); err != nil {
		return err
	}
	g, err := reproduce.Lookup(c.String("preset"))
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	if n := c.Int("seeds"); n != 0 {
		g.Seeds = n
	}
	if n := c.Int("steps"); n != 0 {
		g.Steps = n
	}
	if n := c.Int("probe-epochs"); n != 0 {
		g.ProbeEpochs = n
	}
	if n := c.Int("probe-limit"); n != -1 {
		g.ProbeLimit = n
	}
	if s := c.String("methods"); s != "" {
		g.Methods = splitList(s)
	}
	if s := c.String("rho"); s != "" {
		g.RhoMax = g.RhoMax[:0]
		for _, f := range splitList(s) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return flagError("rho", fmt.Sprintf("%q", f), "comma-separated numbers in (0, 1)")
			}
			g.RhoMax = append(g.RhoMax, v)
		}
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := c.App.Writer
	out := c.String("out")
	fmt.Fprintf(w, "reproduce %s: %d methods x %d rho_max x %d seeds into %s\n", g.Name, len(g.Methods), len(g.RhoMax), g.Seeds, out)
	rep, err := reproduce.Run(ctx, g, reproduce.Options{Out: out, Log: w, Progress: progressWriter(c)})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s", rep.Markdown())
	fmt.Fprintf(w, "\nwritten: %s, %s\n", filepath.Join(out, "table.md"), filepath.Join(out, "results.json"))
	return emitJSON(c, map[string]any{"out": out, "table": filepath.Join(out, "table.md"), "cells": rep.Cells})
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
