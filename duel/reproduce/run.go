package reproduce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/train"
)

// Options are the parts of a reproduction that are not the grid.
type Options struct {
	Out string // output directory: runs/ (shared by every grid) and the default report directory
	// Report is the report's directory (report.md, results.json, plots);
	// "" = Out/<grid name>, or Out/<grid name>-<precision tag> for a grid
	// whose Precision is not "".
	Report string
	// Command is the command line that reproduces the report, written at
	// its top ("" = duelctl reproduce --preset NAME --out OUT).
	Command  string
	Log      io.Writer // one line per run (nil: none)
	Progress io.Writer // training progress bars (nil: none)
	// Train and Test replace the datasets named by the training preset
	// (tests use small synthetic ones).
	Train, Test *data.Dataset
	// ReportOnly writes the report from the runs finished so far, training
	// and evaluating nothing.
	ReportOnly bool
	// Device is where runs train and are evaluated: a registered tensor
	// device name as train.Options.Device takes it ("" = the CPU). The
	// runs' files do not depend on it: a grid may go on on another device.
	Device string
	// DUELPolicy is the runs' train.Options.DUELPolicy: the GPU's DUEL
	// (cudaduel) when they train on CUDA, nil on the CPU.
	DUELPolicy func(adm memory.Admission) memory.Policy
	// Precision, when not nil, sets the device's precisions before each
	// run's training (training true: the grid's, Grid.Precision) and
	// before its evaluation (false: the device's defaults, as duelctl eval
	// computes, so that a run's measures do not depend on the precision it
	// trained in). Nil leaves the device as it is for both.
	Precision func(training bool) error
}

// setPrecision calls opts.Precision when there is one.
func (o Options) setPrecision(training bool) error {
	if o.Precision == nil {
		return nil
	}
	return o.Precision(training)
}

// ReportDir returns the directory of g's report: Report, else Out/<grid
// name>[-<precision tag>].
func (o Options) ReportDir(g Grid) string {
	if o.Report != "" {
		return o.Report
	}
	return filepath.Join(o.Out, g.dirName())
}

// Run trains and evaluates, seed-major, every run of the grid that has no
// saved result yet, and writes the report after every run it finishes (and
// at the end), so that partial progress is always visible. Before training
// anything it checks that no existing run directory holds a run of other
// settings.
func Run(ctx context.Context, g Grid, opts Options) (*Report, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if opts.Out == "" {
		return nil, fmt.Errorf("--out: empty, expected an output directory")
	}
	if err := os.MkdirAll(filepath.Join(opts.Out, "runs"), 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: %w", opts.Out, err)
	}
	repDir := opts.ReportDir(g)
	if err := os.MkdirAll(repDir, 0o755); err != nil {
		return nil, fmt.Errorf("--report %s: %w", repDir, err)
	}
	keys := g.runs()
	cfgs := make([]train.Config, len(keys))
	for i, k := range keys {
		cfg, err := g.runConfig(k.Variant, k.RhoMax, k.Seed)
		if err != nil {
			return nil, err
		}
		if err := checkConfig(runDir(opts, k), cfg, g.Precision); err != nil {
			return nil, err
		}
		cfgs[i] = cfg
	}
	if !opts.ReportOnly {
		// Every run fits this machine's memory on opts.Device, before any
		// trains (each is checked again when it starts).
		for i, k := range keys {
			if err := train.CheckMemory(cfgs[i].MemoryNeedsOn(opts.Device, 1)...); err != nil {
				return nil, fmt.Errorf("run %s (%s, variant %s): %w", runName(k.Variant, k.RhoMax, k.Seed), g.settings(), k.Variant, err)
			}
		}
	}
	if !opts.ReportOnly && len(cfgs) > 0 {
		if err := checkClusterLimit(g, opts, cfgs[0]); err != nil {
			return nil, err
		}
	}
	command := opts.Command
	if command == "" {
		command = fmt.Sprintf("duelctl reproduce --preset %s --out %s", g.Name, opts.Out)
	}
	rep := newReport(g, len(keys), command)
	unsaved := false
	write := func() error {
		unsaved = false
		return rep.Write(repDir)
	}
	for i, k := range keys {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("stopped before run %s (run the same duelctl reproduce command again to go on with the grid): %w", k.name(), err)
		}
		r, err := savedResult(runDir(opts, k))
		if err != nil {
			return rep, fmt.Errorf("run %s: %w", k.name(), err)
		}
		cached, how := r != nil, "saved earlier"
		// A saved evaluation taken with other settings, or with settings
		// it does not record, is measured again.
		stale := cached && !r.evaluatedWith(g.evaluation())
		if (stale || !cached) && opts.ReportOnly {
			if opts.Log != nil {
				why := "not run yet"
				if stale {
					why = fmt.Sprintf("left out, evaluated with %s where the grid asks for %s: run without --report-only to evaluate it again", r.evaluationText(), g.evaluation())
				}
				fmt.Fprintf(opts.Log, "[%d/%d] %s: %s\n", i+1, len(keys), k.name(), why)
			}
			continue
		}
		if (stale || !cached) && unsaved { // the report so far, before the long part
			if err := write(); err != nil {
				return rep, err
			}
		}
		switch {
		case stale:
			was := r.evaluationText()
			if r, err = reevaluate(ctx, g, opts, k, r); err != nil {
				return rep, fmt.Errorf("run %s: evaluating again (saved with %s): %w", k.name(), was, err)
			}
			cached, how = false, fmt.Sprintf("evaluated again in %.0f s, saved with %s", r.ProbeSeconds, was)
		case !cached:
			if r, err = runOne(ctx, g, opts, k, cfgs[i]); err != nil {
				return rep, fmt.Errorf("run %s: %w", k.name(), err)
			}
			how = fmt.Sprintf("trained in %.0f s, evaluated in %.0f s", r.TrainSeconds, r.ProbeSeconds)
		}
		r.Variant, r.Method, r.RhoMax, r.Seed, r.Dir = k.Variant.String(), k.Variant.Method, k.RhoMax, k.Seed, runDir(opts, k)
		rep.add(*r)
		unsaved = true
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "[%d/%d] %s: linear top-1 %.4f (%s)\n", i+1, len(keys), k.name(), r.Top1, how)
		}
		if !cached {
			if err := write(); err != nil {
				return rep, err
			}
		}
	}
	if err := write(); err != nil {
		return rep, err
	}
	return rep, nil
}

// runDir is the directory of one run.
func runDir(opts Options, k runKey) string {
	return filepath.Join(opts.Out, "runs", k.name())
}

// savedResult returns the run's saved evaluation, or nil when there is
// none.
func savedResult(dir string) (*RunResult, error) {
	r, err := readResult(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.Precision == "" {
		ranPrecision(dir, r) // a probe.json written before the field existed
	}
	return r, nil
}

// ranPrecision fills r's precisions from the run's config.json ("ran"),
// leaving them empty when it records none.
func ranPrecision(dir string, r *RunResult) {
	if cfg, err := train.ReadConfig(dir); err == nil && cfg.Ran != nil {
		r.Precision, r.ConvPrecision = cfg.Ran.Precision, cfg.Ran.ConvPrecision
	}
}

// runOne trains (or resumes) one run, evaluates it and saves the
// evaluation as probe.json.
func runOne(ctx context.Context, g Grid, opts Options, k runKey, cfg train.Config) (*RunResult, error) {
	dir := runDir(opts, k)
	resume := train.HasCheckpoint(dir)
	before := 0.0
	if resume {
		before = trainedSeconds(dir)
	}
	if err := opts.setPrecision(true); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := train.Train(ctx, &cfg, train.Options{
		Out: dir, Resume: resume, Progress: opts.Progress, Train: opts.Train, Test: opts.Test,
		Device: opts.Device, DUELPolicy: opts.DUELPolicy,
		ContinueHint: "run the same duelctl reproduce command again to continue it and the grid",
	})
	if err != nil {
		return nil, err
	}
	trainSec := before + time.Since(start).Seconds()
	var ran RunResult
	ranPrecision(dir, &ran)
	if tag := PrecisionTag(ran.Precision, ran.ConvPrecision); tag != g.Precision {
		return nil, fmt.Errorf("%s computed with %s, but the grid is of %s: set the device's precision to the grid's before Run (duelctl reproduce --precision)",
			dir, precisionText(ran.Precision, ran.ConvPrecision), tagText(g.Precision))
	}
	if err := opts.setPrecision(false); err != nil {
		return nil, err
	}
	start = time.Now()
	r, err := evaluate(ctx, dir, g, opts)
	if err != nil {
		return nil, err
	}
	r.Variant, r.Method, r.RhoMax, r.Seed, r.Dir = k.Variant.String(), k.Variant.Method, k.RhoMax, k.Seed, dir
	r.Steps, r.Loss = res.Steps, res.Loss
	r.Precision, r.ConvPrecision = ran.Precision, ran.ConvPrecision
	r.TrainSeconds, r.ProbeSeconds = trainSec, time.Since(start).Seconds()
	made := detectProvenance("")
	made.Command, made.Date = "", time.Now().UTC().Format("2006-01-02 15:04 MST")
	r.Made = &made
	if err := writeResult(dir, r); err != nil {
		return nil, err
	}
	return r, nil
}
