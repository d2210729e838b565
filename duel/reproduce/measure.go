package reproduce

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"time"

	"github.com/duel-ssl/duel/duel/analysis"
	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/eval"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/tensor"
)

// clusterLimit is the presets' Grid.ClusterLimit: the number of test
// images, class-balanced, whose features the clustering measures use
// (duelctl analyze's default --limit).
const clusterLimit = 2000

// embedBatch is the batch of feature extraction.
const embedBatch = 256

// reevaluate measures the finished run k again with g's evaluation
// settings, keeping what its saved evaluation, saved, records of its
// training (steps, loss, precisions, training time, provenance), and
// saves it as probe.json.
func reevaluate(ctx context.Context, g Grid, opts Options, k runKey, saved *RunResult) (*RunResult, error) {
	dir := runDir(opts, k)
	if !train.HasCheckpoint(dir) {
		return nil, fmt.Errorf("%s was measured with %s, the grid asks for %s, and %s has no checkpoint to measure it again: "+
			"give the grid's evaluation settings back, or remove %s to train it again",
			filepath.Join(dir, probeFile), saved.evaluationText(), g.evaluation(), dir, dir)
	}
	if err := opts.setPrecision(false); err != nil {
		return nil, err
	}
	start := time.Now()
	r, err := evaluate(ctx, dir, g, opts)
	if err != nil {
		return nil, err
	}
	r.Variant, r.Method, r.RhoMax, r.Seed, r.Dir = saved.Variant, saved.Method, saved.RhoMax, saved.Seed, dir
	r.Steps, r.Loss, r.Precision, r.ConvPrecision = saved.Steps, saved.Loss, saved.Precision, saved.ConvPrecision
	r.TrainSeconds, r.ProbeSeconds, r.Made = saved.TrainSeconds, time.Since(start).Seconds(), saved.Made
	if err := writeResult(dir, r); err != nil {
		return nil, err
	}
	return r, nil
}

// evaluate measures a finished run: the linear probe of Appendix E on its
// frozen backbone, the memory at the end of training, the clustering of
// its test features and its curves.
//
// A cancelled ctx stops it between its parts and between the probe's
// epochs, with an error wrapping ctx's that says how to go on.
func evaluate(ctx context.Context, dir string, g Grid, opts Options) (*RunResult, error) {
	r, err := measure(ctx, dir, g, opts)
	if ctx.Err() != nil && err != nil {
		return nil, fmt.Errorf("the evaluation of %s, trained, was stopped (run the same duelctl reproduce command again to evaluate it and go on with the grid): %w", dir, err)
	}
	return r, err
}

// measure takes every measure of evaluate.
func measure(ctx context.Context, dir string, g Grid, opts Options) (*RunResult, error) {
	run, err := train.LoadRunOn(dir, -1, opts.Device)
	if err != nil {
		return nil, err
	}
	ev := g.evaluation()
	r := &RunResult{Schema: resultSchema, Evaluation: &ev}
	test, err := split(run, opts, false)
	if err != nil {
		return nil, err
	}
	if err := linearProbe(ctx, run, g, opts, test, r); err != nil {
		return nil, err
	}
	if err := measureMemory(run, r); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := measureClusters(run, test, g.ClusterLimit, r); err != nil {
		return nil, err
	}
	if err := readCurves(dir, r); err != nil {
		return nil, err
	}
	return r, nil
}

// split returns the train (trainSplit) or test split: opts' dataset when
// given, else the run's, with 3 channels.
func split(run *train.Run, opts Options, trainSplit bool) (*data.Dataset, error) {
	ds := opts.Test
	if trainSplit {
		ds = opts.Train
	}
	if ds == nil {
		return run.OpenDataset(trainSplit)
	}
	return ds.ToRGB(), nil
}

// extract returns the features of layer of at most limit images of ds
// (class-balanced; 0 = all).
func extract(run *train.Run, ds *data.Dataset, layer string, limit int) (*eval.Features, error) {
	mean, std, err := run.Normalization()
	if err != nil {
		return nil, err
	}
	return eval.Extract(ds, func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return run.Embed(x, layer, embedBatch)
	}, eval.ExtractOptions{Mean: mean, Std: std, Batch: embedBatch, Limit: limit})
}

// linearProbe fits the linear probe on the backbone's features of the
// train split (at most g.ProbeLimit images per split) and sets r.Top1 and
// r.Classes.
func linearProbe(ctx context.Context, run *train.Run, g Grid, opts Options, test *data.Dataset, r *RunResult) error {
	trainDS, err := split(run, opts, true)
	if err != nil {
		return err
	}
	r.Classes = max(trainDS.NumClasses(), test.NumClasses())
	fTrain, err := extract(run, trainDS, "backbone", g.ProbeLimit)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fTest, err := extract(run, test, "backbone", g.ProbeLimit)
	if err != nil {
		return err
	}
	lin := eval.DefaultLinearConfig()
	lin.Epochs, lin.Classes, lin.Device = g.ProbeEpochs, r.Classes, run.Device
	out, err := eval.LinearProbeContext(ctx, fTrain, fTest, lin)
	if err != nil {
		return err
	}
	r.Top1 = out.Result.Top1
	return nil
}

// measureMemory sets the memory's class entropy, class counts, rows and
// ages at the end of training (nothing for a method without a memory).
func measureMemory(run *train.Run, r *RunResult) error {
	m := run.Memory
	if m == nil {
		return nil
	}
	h := m.ClassEntropy()
	r.MemoryClassEntropy, r.MemoryRows = &h, m.Len()
	if r.Classes > 0 {
		counts, err := m.ClassCounts(r.Classes)
		if err != nil {
			return fmt.Errorf("memory of run %s: %w", run.Dir, err)
		}
		r.MemoryClassCounts = counts
	}
	if m.Len() > 0 {
		u := run.MemoryUsage() // the ages as metrics.jsonl has them at the run's step
		r.MemoryAge = &MemoryAge{
			AgeMean: finite(u.AgeMean), AgeMedian: finite(u.AgeMedian), AgeMax: finite(u.AgeMax),
			StaleMean: finite(u.StaleMean), StaleMax: finite(u.StaleMax),
			UsesMean: finite(u.UsesMean), UsesMax: finite(u.UsesMax),
		}
	}
	return nil
}

// measureClusters sets the intra-class variance and inter-class similarity
// of the L2-normalised projector features (backbone features when the
// method has no projector) of at most limit test images (0 = all), as
// duelctl analyze measures them.
func measureClusters(run *train.Run, test *data.Dataset, limit int, r *RunResult) error {
	r.Layer = "projector"
	if run.Projector == nil {
		r.Layer = "backbone"
	}
	if err := clusterLimitFits(limit, test.NumClasses()); err != nil {
		return err
	}
	f, err := extract(run, test, r.Layer, limit)
	if err != nil {
		return err
	}
	cs, err := analysis.Cluster(f)
	if err != nil {
		return fmt.Errorf("test features of run %s: %w", run.Dir, err)
	}
	r.ClusterSamples = f.N
	r.IntraClassVariance, r.InterClassSimilarity = finite(cs.MeanIntraVariance), finite(cs.MeanInterSimilarity)
	return nil
}

// clusterLimitFits refuses a cluster limit below two test images per
// class of classes: one image's intra-class variance is 0 by construction.
func clusterLimitFits(limit, classes int) error {
	if limit > 0 && limit < 2*classes {
		return fmt.Errorf("--cluster-limit %d: expected at least 2 test images per class (2 x %d classes = %d), or 0 for the whole test split", limit, classes, 2*classes)
	}
	return nil
}

// checkClusterLimit checks g's cluster limit against the classes of the
// test split of the grid's dataset (cfg: a run's configuration; every
// run of a grid reads one dataset) before any run trains, where the
// measures of the first run would refuse it after its training. A split
// that cannot be opened yet is left to the training's own error.
func checkClusterLimit(g Grid, opts Options, cfg train.Config) error {
	if g.ClusterLimit <= 0 {
		return nil
	}
	test := opts.Test
	if test == nil {
		var err error
		if test, err = data.Open(cfg.Dataset, cfg.Data, false); err != nil {
			return nil
		}
	}
	return clusterLimitFits(g.ClusterLimit, test.NumClasses())
}

// readCurves sets the curves from the run's metrics.jsonl (none when the
// file is missing).
func readCurves(dir string, r *RunResult) error {
	ms, err := train.ReadMetrics(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	r.Curves = Curves{}
	for _, m := range ms {
		r.Curves.KNNTop1.add(m.Step, m.KNNTop1)
		r.Curves.MemoryClassEntropy.add(m.Step, m.MemoryClassEntropy)
		r.Curves.MemoryAgeMean.add(m.Step, m.MemoryAgeMean)
	}
	return nil
}

// trainedSeconds is the training time that metrics.jsonl records: its last
// elapsed_s, which a resumed process continues; in the files of versions
// whose elapsed_s restarted from 0 in a resumed process, the sum of each
// process's last.
func trainedSeconds(dir string) float64 {
	ms, err := train.ReadMetrics(dir)
	if err != nil {
		return 0
	}
	total, last := 0.0, 0.0
	for _, m := range ms {
		if m.ElapsedS < last {
			total += last
		}
		last = m.ElapsedS
	}
	return total + last
}

// finite returns &v, or nil for NaN and infinities (which JSON lacks).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
