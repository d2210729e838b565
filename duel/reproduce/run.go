package reproduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/eval"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/atomicfile"
	"github.com/duel-ssl/duel/tensor"
)

// probeFile holds a finished run's result, next to the run's files.
const probeFile = "probe.json"

// Options are the parts of a reproduction that are not the grid.
type Options struct {
	Out      string    // output directory: runs/, results.json, table.md
	Log      io.Writer // one line per run (nil: none)
	Progress io.Writer // training progress bars (nil: none)
	// Train and Test replace the datasets named by the training preset
	// (tests use small synthetic ones).
	Train, Test *data.Dataset
}

// RunResult is one (method, ρmax, seed) run with its evaluation.
type RunResult struct {
	Method             string   `json:"method"`
	RhoMax             float64  `json:"rho_max"`
	Seed               int      `json:"seed"`
	Dir                string   `json:"dir"`
	Steps              int      `json:"steps"`
	Loss               float64  `json:"loss"`
	Top1               float64  `json:"top1"`
	MemoryClassEntropy *float64 `json:"memory_class_entropy,omitempty"`
	TrainSeconds       float64  `json:"train_seconds"`
	ProbeSeconds       float64  `json:"probe_seconds"`
}

// Run trains and evaluates every run of the grid that has no saved result
// yet, then writes results.json and table.md into opts.Out.
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
	rep := &Report{Grid: g}
	total := len(g.Methods) * len(g.RhoMax) * g.Seeds
	for _, method := range g.Methods {
		for _, rho := range g.RhoMax {
			for seed := 0; seed < g.Seeds; seed++ {
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				r, cached, err := runOne(ctx, g, opts, method, rho, seed)
				if err != nil {
					return rep, fmt.Errorf("run %s: %w", runName(method, rho, seed), err)
				}
				rep.Runs = append(rep.Runs, *r)
				if opts.Log != nil {
					how := "done"
					if cached {
						how = "saved earlier"
					}
					fmt.Fprintf(opts.Log, "[%d/%d] %s: linear top-1 %.4f (%s)\n", len(rep.Runs), total, runName(method, rho, seed), r.Top1, how)
				}
			}
		}
	}
	rep.summarise()
	if err := rep.write(opts.Out); err != nil {
		return rep, err
	}
	return rep, nil
}

// runOne trains (or resumes) one run and probes it, unless its result is saved.
func runOne(ctx context.Context, g Grid, opts Options, method string, rho float64, seed int) (*RunResult, bool, error) {
	dir := filepath.Join(opts.Out, "runs", runName(method, rho, seed))
	if r, err := readResult(dir); err == nil {
		return r, true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	cfg, err := train.Preset(g.TrainPreset, method)
	if err != nil {
		return nil, false, err
	}
	if g.Dataset != "" {
		cfg.Dataset = g.Dataset
	}
	if g.Steps > 0 {
		cfg.Steps = g.Steps
	}
	cfg.Imbalance, cfg.RhoMax, cfg.Seed = "dominant", rho, uint64(seed)
	cfg.KNNEvery = 0 // the probe below is the evaluation
	_, statErr := os.Stat(filepath.Join(dir, "checkpoint"))
	start := time.Now()
	res, err := train.Train(ctx, &cfg, train.Options{
		Out: dir, Resume: statErr == nil, Progress: opts.Progress, Train: opts.Train, Test: opts.Test,
	})
	if err != nil {
		return nil, false, err
	}
	trainSec := time.Since(start).Seconds()
	start = time.Now()
	r, err := probe(dir, g, opts)
	if err != nil {
		return nil, false, err
	}
	r.Method, r.RhoMax, r.Seed, r.Dir = method, rho, seed, dir
	r.Steps, r.Loss = res.Steps, res.Loss
	r.TrainSeconds, r.ProbeSeconds = trainSec, time.Since(start).Seconds()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, false, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, probeFile), append(b, '\n')); err != nil {
		return nil, false, err
	}
	return r, false, nil
}

// probe runs the linear probe of Appendix E on the run's frozen backbone.
func probe(dir string, g Grid, opts Options) (*RunResult, error) {
	run, err := train.LoadRun(dir)
	if err != nil {
		return nil, err
	}
	mean, std, err := run.Normalization()
	if err != nil {
		return nil, err
	}
	var feats [2]*eval.Features
	classes := 0
	for i, split := range []bool{true, false} {
		ds := opts.Train
		if !split {
			ds = opts.Test
		}
		if ds == nil {
			if ds, err = run.OpenDataset(split); err != nil {
				return nil, err
			}
		}
		ds = ds.ToRGB()
		classes = max(classes, ds.NumClasses())
		lim := g.ProbeLimit
		var idx []int
		if lim > 0 && lim < ds.Len() {
			idx = eval.BalancedSubset(ds.Labels, lim)
			ds = ds.Subset(idx)
		}
		f, err := eval.Extract(ds, func(x *tensor.Tensor) (*tensor.Tensor, error) {
			return run.Embed(x, "backbone", 256)
		}, eval.ExtractOptions{Mean: mean, Std: std, Batch: 256})
		if err != nil {
			return nil, err
		}
		feats[i] = f
	}
	lin := eval.DefaultLinearConfig()
	lin.Epochs, lin.Classes = g.ProbeEpochs, classes
	out, err := eval.LinearProbe(feats[0], feats[1], lin)
	if err != nil {
		return nil, err
	}
	r := &RunResult{Top1: out.Result.Top1}
	if run.Memory != nil {
		h := run.Memory.ClassEntropy()
		r.MemoryClassEntropy = &h
	}
	return r, nil
}

// readResult loads a saved probe result.
func readResult(dir string) (*RunResult, error) {
	path := filepath.Join(dir, probeFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r RunResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to evaluate the run again)", path, err)
	}
	return &r, nil
}
