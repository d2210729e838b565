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
	"github.com/duel-ssl/duel/duel/train"
)

func reproduceCommand() *cli.Command {
	return &cli.Command{
		Name:  "reproduce",
		Usage: "train and evaluate the paper's experiment grids (Table 1, Table 2, Appendix F.3) at a chosen scale",
		Description: "Every (variant, rho_max, seed) of the preset's grid is one `duelctl train` run in\n" +
			"OUT/runs/<run>, then evaluated: the linear probe of Appendix E on its frozen backbone, the memory's\n" +
			"class entropy, class counts and row ages, the intra-class variance and inter-class similarity of its\n" +
			"test features (as duelctl analyze), and its curves from metrics.jsonl; all saved in the run's\n" +
			"probe.json. A variant is method[:key=value,...] with `duelctl train` flag names, e.g.\n" +
			"dsimclr:negatives=memory,eps=0; its runs are named dsimclr_negatives-memory_eps-0-rho0.75-seed0.\n\n" +
			"Runs go seed-major (every cell of seed 0, then seed 1, ...). OUT/runs is shared: another preset\n" +
			"on the same OUT reuses the runs whose settings are equal, and refuses a run directory that holds\n" +
			"other settings. The report (report.md, results.json, plots) goes to OUT/<preset> or --report DIR\n" +
			"and is rewritten after every finished run; a verdict.md there is shown under report.md's title,\n" +
			"and the plots and archived runs an earlier report of another grid left there are removed.\n" +
			"Running the same command again skips finished runs and resumes interrupted ones.\n\n" +
			"The report keeps a copy of each finished run's config.json and probe.json in REPORT/runs/<run>/:\n" +
			"to go on with a grid on another machine, copy that folder to OUT/runs there and run the command\n" +
			"again; --report-only rewrites the report from the runs finished so far without training.\n" +
			"A finished run whose probe.json records other evaluation settings (--probe-epochs, --probe-limit,\n" +
			"--cluster-limit) is measured again from its checkpoint, without training.\n\n" +
			"--precision and --conv-precision (as duelctl train's) set the precision runs train in; every run\n" +
			"is evaluated in the device's default precision, as duelctl eval evaluates it. Runs whose products\n" +
			"are float32 (convolutions float32 on the CPU, TF32 on a GPU by default) keep the names above;\n" +
			"others end in their precision, e.g. dmoco-rho0.75-seed0-bf16, and their report goes to\n" +
			"OUT/<preset>-bf16, so that runs of different precisions are never mixed.\n\n" +
			"Presets: " + presetList(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "preset", Usage: "the grid: " + strings.Join(reproduce.Names(), ", ") + " (required)", Required: true},
			&cli.StringFlag{Name: "out", Usage: "output directory: runs/ (shared by the presets) and <preset>/ (the report) (required)", Required: true},
			&cli.StringFlag{Name: "report", Usage: "report directory (report.md, results.json, plots), e.g. docs/results/table1-cpu (default: OUT/<preset>)"},
			&cli.IntFlag{Name: "seeds", Usage: fmt.Sprintf("seeds per cell (0 = the preset's: 3, smoke 1), at most %d", maxReproduceSeeds)},
			&cli.IntFlag{Name: "steps", Usage: "training steps per run, as --set steps=N (0 = the preset's)"},
			&cli.StringFlag{Name: "methods", DefaultText: "the preset's variants, listed under Presets above", Usage: "comma-separated variants to run instead of the preset's, method[:key=value,...] (e.g. moco,dmoco:mem-refresh=64,dsimclr:negatives=memory,eps=0)"},
			&cli.StringFlag{Name: "rho", DefaultText: "the preset's rho_max values, listed under Presets above", Usage: "comma-separated rho_max values to run instead of the preset's (e.g. 0.5,0.75)"},
			&cli.StringSliceFlag{Name: "set", DefaultText: "none: the preset's settings alone", Usage: "`key=value`: a duelctl train setting (flag name without dashes) for every run, applied after the preset's overrides (repeatable, e.g. --set steps=500 --set knn-every=100)"},
			&cli.IntFlag{Name: "probe-epochs", Usage: "linear-probe epochs (0 = the preset's: 100, Appendix E)"},
			&cli.IntFlag{Name: "probe-limit", Value: -1, Usage: "images per split for the probe (-1 = the preset's, 0 = whole splits)"},
			&cli.IntFlag{Name: "cluster-limit", Value: -1, Usage: "class-balanced test images of the clustering measures, as analyze --limit (-1 = the preset's: 2000; 0 = the whole test split, for comparisons with the paper's Table 2; else at least 2 a class)"},
			&cli.BoolFlag{Name: "report-only", Usage: "write the report from the runs finished so far; train and evaluate nothing"},
			deviceFlag,
			precisionFlag,
			convPrecisionFlag,
			jsonFlag,
		},
		Action: runReproduce,
	}
}

// maxReproduceSeeds bounds --seeds: the grid lists its runs up front, so
// --seeds 1000000000 would run out of memory before printing anything.
const maxReproduceSeeds = 1000

func presetList() string {
	var b strings.Builder
	for _, n := range reproduce.Names() {
		g, _ := reproduce.Lookup(n)
		fmt.Fprintf(&b, "\n  %-13s [%s] %s", n, g.Kind, g.Description)
	}
	return b.String()
}

func runReproduce(c *cli.Context) error {
	defer train.CollectSooner()()
	device, err := computeDevice(c)
	if err != nil {
		return err
	}
	g, err := reproduce.Lookup(c.String("preset"))
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	for _, f := range []struct {
		name string
		to   *int
		max  int // 0: no bound
	}{{"seeds", &g.Seeds, maxReproduceSeeds}, {"probe-epochs", &g.ProbeEpochs, 0}} {
		switch n := c.Int(f.name); {
		case n < 0:
			return flagError(f.name, n, "an integer >= 1, or 0 for the preset's")
		case f.max > 0 && n > f.max:
			return flagError(f.name, n, fmt.Sprintf("an integer in [1, %d], or 0 for the preset's", f.max))
		case n > 0:
			*f.to = n
		}
	}
	if n := c.Int("probe-limit"); n != -1 {
		g.ProbeLimit = n
	}
	if n := c.Int("cluster-limit"); n != -1 {
		g.ClusterLimit = n
	}
	// Given empty (--methods ""), they are refused by g.Validate rather
	// than read as not given.
	if c.IsSet("methods") {
		s := c.String("methods")
		if g.Methods, err = reproduce.ParseVariantList(s); err != nil {
			return fmt.Errorf("--methods: %w", err)
		}
	}
	if c.IsSet("rho") {
		g.RhoMax = g.RhoMax[:0]
		for _, f := range splitList(c.String("rho")) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return flagError("rho", fmt.Sprintf("%q", f), "comma-separated numbers in [0, 1]")
			}
			g.RhoMax = append(g.RhoMax, v)
		}
	}
	switch n := c.Int("steps"); {
	case n < 0:
		return flagError("steps", n, "an integer >= 0 (0 = the preset's)")
	case n > 0:
		g.Set = append(g.Set, fmt.Sprintf("steps=%d", n))
	}
	g.Set = append(g.Set, c.StringSlice("set")...)
	products, convs, err := devicePrecisions(device)
	if err != nil {
		return err
	}
	g.Precision = reproduce.PrecisionTag(products, convs)
	if err := g.Validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := c.App.Writer
	out := c.String("out")
	for _, f := range []string{"out", "report"} {
		if p := c.String(f); p != "" {
			if err := checkOutDir(f, p); err != nil {
				return err
			}
		}
	}
	duelPolicy, err := duelPolicyOn(device)
	if err != nil {
		return err
	}
	opts := reproduce.Options{Out: out, Report: c.String("report"), Command: reproduceCommandLine(c), Log: w,
		Progress: progressWriter(c), ReportOnly: c.Bool("report-only"), Device: device, DUELPolicy: duelPolicy}
	if opts.Precision, err = trainingPrecision(device, products, convs); err != nil {
		return err
	}
	repDir := opts.ReportDir(g)
	fmt.Fprintf(w, "reproduce %s: %d variants x %d rho_max x %d seeds, runs in %s, report in %s%s\n",
		g.Name, len(g.Methods), len(g.RhoMax), g.Seeds, filepath.Join(out, "runs"), repDir, precisionNote(device, products, convs))
	rep, err := reproduce.Run(ctx, g, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s", rep.Markdown())
	report := filepath.Join(repDir, "report.md")
	fmt.Fprintf(w, "written: %s, %s and %d plots\n", report, filepath.Join(repDir, "results.json"), len(rep.Plots))
	return emitJSON(c, map[string]any{"out": out, "report_dir": repDir, "report": report,
		"runs": len(rep.Runs), "cells": rep.Cells,
		"precision": products, "conv_precision": convs})
}

// reproduceCommandLine rebuilds the command line from the flags given, for
// the top of report.md.
func reproduceCommandLine(c *cli.Context) string {
	args := []string{"duelctl", "reproduce"}
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if !c.IsSet(name) || name == "json" || name == "report-only" {
			continue
		}
		if name == "set" {
			for _, s := range c.StringSlice(name) {
				args = append(args, "--set", shellQuote(s))
			}
			continue
		}
		args = append(args, "--"+name, shellQuote(c.String(name)))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:=/+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
