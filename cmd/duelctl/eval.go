package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/eval"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/tensor"
)

func evalCommand() *cli.Command {
	lin, solo, knn := eval.DefaultLinearConfig(), eval.SoloLinearConfig(), eval.DefaultKNNConfig()
	return &cli.Command{
		Name:      "eval",
		Usage:     "evaluate a run's frozen encoder: linear probe or kNN classifier",
		ArgsUsage: " ",
		Description: "Extracts the features of the train and test splits of the run's dataset, or of --dataset's (class-balanced\n" +
			"splits, used whole unless --limit) with the frozen encoder in eval mode (BatchNorm running\n" +
			"statistics), without augmentation, once; then:\n" +
			"  linear: one linear layer on the cached features, cross-entropy, Adam (paper, Appendix E:\n" +
			"          weight decay 1e-6, lr 1e-3, batch 256, 100 epochs; no lr decay), top-1/top-5 on test;\n" +
			"          --optimizer sgd: solo-learn's linear evaluation instead (SGD, momentum 0.9, no weight\n" +
			"          decay, the rate x0.1 after 60% and 80% of the epochs; lr 0.1 here, where solo-learn's\n" +
			"          scripts use 0.1 to 3 by method: set --lr), on the same cached features (solo-learn also\n" +
			"          augments the training images every epoch);\n" +
			"  knn:    cosine similarity of L2-normalised features, the k nearest training rows vote with\n" +
			"          weight exp(sim/T) (InstDisc's k 200, T 0.07; solo-learn's classifier defaults to k 20)\n" +
			"          or one vote each.\n" +
			"--json prints {\"protocol\", \"top1\", \"top5\" (with more than 5 classes), \"train_samples\",\n" +
			"\"test_samples\", ...}.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "run directory written by duelctl train (required)"},
			&cli.StringFlag{Name: "protocol", Value: "linear", Usage: "linear or knn"},
			evalDatasetFlag, evalDataFlag,
			&cli.StringFlag{Name: "layer", Value: "backbone", Usage: "features: backbone (pooled, before fc) or projector"},
			&cli.IntFlag{Name: "limit", Value: 0, Usage: "use at most N images of each split, balanced over the classes: 0 (all) or at least one image per class"},
			&cli.IntFlag{Name: "epochs", Value: lin.Epochs, Usage: "linear: training epochs, at least 1"},
			&cli.IntFlag{Name: "batch", Value: lin.Batch, Usage: "linear: batch size (also the feature extraction batch)"},
			&cli.StringFlag{Name: "optimizer", Value: lin.Optimizer.String(), Usage: "linear: adam (the paper's probe) or sgd (solo-learn's linear evaluation)"},
			&cli.Float64Flag{Name: "lr", Value: lin.LR, DefaultText: fmt.Sprintf("%g with adam, %g with sgd", lin.LR, solo.LR), Usage: "linear: learning rate"},
			&cli.Float64Flag{Name: "wd", Value: lin.WeightDecay, DefaultText: fmt.Sprintf("%g with adam, %g with sgd", lin.WeightDecay, solo.WeightDecay), Usage: "linear: weight decay (L2, as torch.optim's)"},
			&cli.Uint64Flag{Name: "seed", Value: 0, Usage: "linear: seed of the initial weights and the batch order"},
			&cli.IntFlag{Name: "k", Value: knn.K, Usage: "knn: neighbours"},
			&cli.Float64Flag{Name: "temperature", Value: knn.Temperature, Usage: "knn: temperature T of the weighted vote"},
			&cli.StringFlag{Name: "vote", Value: knn.Vote.String(), Usage: "knn: weighted or majority"},
			stepFlag,
			modelDeviceFlag,
			jsonFlag,
		},
		Action: runEval,
	}
}

// evalResult is the --json object of duelctl eval.
type evalResult struct {
	Protocol     string   `json:"protocol"`
	Top1         float64  `json:"top1"`
	Top5         *float64 `json:"top5,omitempty"`
	TrainSamples int      `json:"train_samples"`
	TestSamples  int      `json:"test_samples"`
	Layer        string   `json:"layer"`
	Dataset      string   `json:"dataset"`
	Classes      int      `json:"classes"`
	Step         int      `json:"step"`
	Epochs       int      `json:"epochs,omitempty"`
	Optimizer    string   `json:"optimizer,omitempty"`
	TrainLoss    *float64 `json:"train_loss,omitempty"`
	K            int      `json:"k,omitempty"`
	Vote         string   `json:"vote,omitempty"`
	Seconds      float64  `json:"seconds"`
}

// linearOptimizerTitle names the probe's optimiser in the summary line:
// "Adam" or "SGD".
func linearOptimizerTitle(o eval.LinearOptimizer) string {
	if o == eval.LinearSGD {
		return "SGD"
	}
	return "Adam"
}

func runEval(c *cli.Context) error {
	if _, err := computeDevice(c); err != nil {
		return err
	}
	if c.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only, see --help)", c.Args().First())
	}
	protocol := c.String("protocol")
	if protocol != "linear" && protocol != "knn" {
		return flagError("protocol", fmt.Sprintf("%q", protocol), "linear or knn")
	}
	lin := eval.DefaultLinearConfig()
	switch o, err := eval.ParseLinearOptimizer(c.String("optimizer")); {
	case err != nil:
		return flagError("optimizer", fmt.Sprintf("%q", c.String("optimizer")), "adam or sgd")
	case o == eval.LinearSGD:
		lin = eval.SoloLinearConfig()
	}
	lin.Epochs, lin.Batch, lin.Seed = c.Int("epochs"), c.Int("batch"), c.Uint64("seed")
	if c.IsSet("lr") {
		lin.LR = c.Float64("lr")
	}
	if c.IsSet("wd") {
		lin.WeightDecay = c.Float64("wd")
	}
	knn := eval.DefaultKNNConfig()
	knn.K, knn.Temperature = c.Int("k"), c.Float64("temperature")
	vote, err := eval.ParseVote(c.String("vote"))
	if err != nil {
		return flagError("vote", fmt.Sprintf("%q", c.String("vote")), "weighted or majority")
	}
	knn.Vote = vote
	switch {
	case lin.Epochs < 1:
		// 0 would report the top-1 of the untrained, randomly initialised
		// layer as if it were the probe's. The linear-only flags are
		// checked whatever the protocol, as --lr and --wd are.
		return flagError("epochs", lin.Epochs, "an integer >= 1 (the linear probe's training epochs)")
	case lin.Batch <= 0:
		return flagError("batch", lin.Batch, "an integer > 0")
	case !(lin.LR > 0):
		return flagError("lr", lin.LR, "a number > 0")
	case !(lin.WeightDecay >= 0):
		return flagError("wd", lin.WeightDecay, "a number >= 0")
	case knn.K <= 0:
		return flagError("k", knn.K, "an integer > 0")
	case !(knn.Temperature > 0):
		return flagError("temperature", knn.Temperature, "a number > 0")
	case c.Int("limit") < 0:
		return flagError("limit", c.Int("limit"), "an integer >= 0 (0 = whole splits)")
	}
	start := time.Now()
	r, err := loadRunFlag(c)
	if err != nil {
		return err
	}
	layer, err := runLayer(c, r, c.String("layer"), false)
	if err != nil {
		return err
	}
	feats := [2]*eval.Features{}
	var classes int
	for i, split := range []bool{true, false} {
		f, ds, err := extractSplit(c, r, split, layer, c.Int("limit"), lin.Batch)
		if err != nil {
			return err
		}
		feats[i] = f
		classes = max(classes, ds.NumClasses())
	}
	train, test := feats[0], feats[1]
	if l := c.Int("limit"); l > 0 && l < classes {
		// A class-balanced sample of fewer images than classes leaves
		// classes out: a top-5 over 5 classes is 100%.
		return flagError("limit", l, fmt.Sprintf("0 (whole splits) or at least one image per class (%d)", classes))
	}
	if n := classesPresent(train.Labels); n < 2 {
		return fmt.Errorf("the training split of run %s holds %d class, expected 2 at least: every classifier scores 100%% on one class", r.Dir, n)
	}
	res := evalResult{Protocol: protocol, Layer: layer, Dataset: evalSource(c, r).name, Classes: classes, Step: r.Step}
	var acc eval.Result
	switch protocol {
	case "linear":
		lin.Classes, lin.Device = classes, r.Device
		// A batch beyond the training features is the whole set each epoch
		// (as PyTorch's DataLoader does it): the same updates, without a
		// buffer of --batch rows.
		lin.Batch = min(lin.Batch, train.N)
		bar := progressBar(c, lin.Epochs, "linear probe")
		lin.Progress = func(epoch int, loss float64) {
			if bar != nil {
				bar.Describe(fmt.Sprintf("linear probe (loss %.4f)", loss))
				bar.Set(epoch)
			}
		}
		out, err := eval.LinearProbe(train, test, lin)
		finishBar(bar)
		if err != nil {
			return err
		}
		acc = out.Result
		res.Epochs, res.Optimizer, res.TrainLoss = lin.Epochs, lin.Optimizer.String(), &out.TrainLoss
		fmt.Fprintf(c.App.Writer, "linear probe (%d epochs, %s lr %g wd %g, batch %d): ", lin.Epochs, linearOptimizerTitle(lin.Optimizer), lin.LR, lin.WeightDecay, lin.Batch)
	case "knn":
		knn.Classes, knn.Device = classes, r.Device
		bar := progressBar(c, test.N, "kNN")
		knn.Progress = func(done int) {
			if bar != nil {
				bar.Set(done)
			}
		}
		acc, err = eval.KNN(train, test, knn)
		finishBar(bar)
		if err != nil {
			return err
		}
		res.K, res.Vote = min(knn.K, train.N), knn.Vote.String()
		fmt.Fprintf(c.App.Writer, "kNN (k %d, %s vote, T %g): ", res.K, knn.Vote, knn.Temperature)
	}
	res.Top1, res.TrainSamples, res.TestSamples = acc.Top1, acc.Train, acc.Test
	fmt.Fprintf(c.App.Writer, "top-1 %.4f", acc.Top1)
	if acc.HasTop5 {
		top5 := acc.Top5
		res.Top5 = &top5
		fmt.Fprintf(c.App.Writer, ", top-5 %.4f", acc.Top5)
	}
	res.Seconds = time.Since(start).Seconds()
	fmt.Fprintf(c.App.Writer, " (%s features of %d train / %d test images, step %d, %.1f s)\n", layer, acc.Train, acc.Test, r.Step, res.Seconds)
	return emitJSON(c, res)
}

// evalDatasetFlag and evalDataFlag choose the data eval reads (analyze
// takes --data alone: its memory's classes are the run's dataset's).
var (
	evalDatasetFlag = &cli.StringFlag{Name: "dataset", DefaultText: "the run's",
		Usage: "dataset whose train and test splits are evaluated (transfer): " + strings.Join(data.Names, ", ") + "; the images are normalised as the run's training views and fed at their own size (e.g. STL-10's 96x96 through a CIFAR-stem network: its global pooling takes any size)"}
	evalDataFlag = &cli.StringFlag{Name: "data", DefaultText: "the run's (config.json), or the cache for another --dataset",
		Usage: "directory of the dataset evaluated"}
)

// dataSource is the dataset eval or analyze reads.
type dataSource struct {
	name, dir string
	given     bool // by --dataset
}

// evalSource returns the dataset to read: the run's, or --dataset and
// --data (--data alone: the run's dataset from another directory).
func evalSource(c *cli.Context, r *train.Run) dataSource {
	src := dataSource{name: r.Config.Dataset, dir: r.Config.Data}
	if c.IsSet("dataset") && c.String("dataset") != r.Config.Dataset {
		src = dataSource{name: c.String("dataset"), given: true}
	}
	if c.IsSet("data") {
		src.dir = c.String("data")
	}
	return src
}

// checkDataFlag refuses --data where the dataset read is dataset default,
// the set embedded in the binary, which reads no directory: the flag would
// be ignored, and a run, evaluation or listing of the embedded images
// taken for one of the directory's. what names the dataset for the message
// ("--dataset default", "the run's dataset default"); hint, when not
// empty, says how to read the directory ("name ... with --dataset").
func checkDataFlag(c *cli.Context, dataset, what, hint string) error {
	if dataset != "default" || !c.IsSet("data") {
		return nil
	}
	expected := "nothing with " + what + " (the CIFAR-10 subset embedded in the binary reads no directory)"
	if hint != "" {
		expected += "; " + hint + " (" + strings.Join(dirDatasets(), ", ") + ")"
	}
	return flagError("data", strconv.Quote(c.String("data")), expected)
}

// dirDatasets lists the datasets read from a directory: all but default.
func dirDatasets() []string {
	var out []string
	for _, n := range data.Names {
		if n != "default" {
			out = append(out, n)
		}
	}
	return out
}

// loadRunFlag checks --run and loads the run.
func loadRunFlag(c *cli.Context) (*train.Run, error) {
	dir := c.String("run")
	if dir == "" {
		return nil, flagError("run", `""`, "a run directory written by duelctl train")
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--run %s: %w (expected a run directory written by duelctl train)", dir, err)
	}
	if !fi.IsDir() {
		return nil, flagError("run", dir, "a run directory written by duelctl train, not a file")
	}
	step := -1
	if c.IsSet("step") {
		if step = c.Int("step"); step < 0 {
			return nil, flagError("step", step, "a step >= 0 whose checkpoint the run kept")
		}
	}
	dev, err := computeDevice(c)
	if err != nil {
		return nil, err
	}
	r, err := train.LoadRunOn(dir, step, dev)
	if ce := (*train.CapabilityError)(nil); errors.As(err, &ce) {
		return nil, ce // names --device itself
	}
	if err != nil {
		return nil, fmt.Errorf("--run %s: %w", dir, err)
	}
	return r, nil
}

// runLayer validates a --layer value for the run. With fallback, "projector"
// on a method without one becomes "backbone".
func runLayer(c *cli.Context, r *train.Run, layer string, fallback bool) (string, error) {
	switch layer {
	case "backbone":
		return layer, nil
	case "projector":
		if r.Projector != nil {
			return layer, nil
		}
		if fallback {
			return "backbone", nil
		}
		return "", flagError("layer", `"projector"`, fmt.Sprintf("backbone (method %s has no projector)", r.Config.Method))
	}
	return "", flagError("layer", fmt.Sprintf("%q", layer), "backbone or projector")
}

// extractSplit extracts the features of one split of the run's dataset
// (at most limit images, class-balanced, when limit > 0).
func extractSplit(c *cli.Context, r *train.Run, trainSplit bool, layer string, limit, batch int) (*eval.Features, *data.Dataset, error) {
	split := "test"
	if trainSplit {
		split = "train"
	}
	src := evalSource(c, r)
	what, hint := "--dataset default", ""
	if !src.given {
		what = "the run's dataset default"
	}
	if c.Command.Name == "eval" { // analyze reads the run's dataset only
		hint = "name the dataset in the directory with --dataset"
	}
	if err := checkDataFlag(c, src.name, what, hint); err != nil {
		return nil, nil, err
	}
	var ds *data.Dataset
	var err error
	if src.given {
		if ds, err = data.Open(src.name, src.dir, trainSplit); err != nil {
			return nil, nil, fmt.Errorf("--dataset %s: opening its %s split: %w", src.name, split, err)
		}
		ds = ds.ToRGB()
	} else {
		// The run's dataset, perhaps moved (--data): its statistics are
		// read there too, and it must be the data the run trained on
		// (config.json's trained_on).
		r.Config.Data = src.dir
		if ds, err = r.OpenDataset(trainSplit); err != nil {
			return nil, nil, fmt.Errorf("opening the %s split of dataset %q (run %s): %w", split, r.Config.Dataset, r.Dir, err)
		}
	}
	mean, std, err := r.Normalization() // the training views', whatever the data evaluated
	if err != nil {
		return nil, nil, fmt.Errorf("normalisation of dataset %q (run %s): %w", r.Config.Dataset, r.Dir, err)
	}
	n := ds.Len()
	if limit > 0 {
		n = min(n, limit)
	}
	if err := checkExtractBatch(r, ds, batch, n); err != nil {
		return nil, nil, err
	}
	batch = max(min(batch, n), 1) // a larger batch is the whole split at once
	bar := progressBar(c, n, split+" features")
	f, err := eval.Extract(ds, func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return r.Embed(x, layer, batch)
	}, eval.ExtractOptions{Mean: mean, Std: std, Batch: batch, Limit: limit, Progress: func(done, total int) {
		if bar != nil {
			bar.Set(done)
		}
	}})
	finishBar(bar)
	if err != nil {
		return nil, nil, err
	}
	if f.N == 0 {
		return nil, nil, fmt.Errorf("the %s split of dataset %q is empty (run %s)", split, r.Config.Dataset, r.Dir)
	}
	return f, ds, nil
}

// checkExtractBatch refuses a --batch whose encoder calls on the host (the
// first min(batch, n) images of a split and the stem's output) cannot fit
// this machine's memory. On a GPU the activations live in the device's
// memory, which the backend checks itself.
func checkExtractBatch(r *train.Run, ds *data.Dataset, batch, n int) error {
	if r.Device != "" && r.Device != tensor.CPU {
		return nil
	}
	m := min(batch, n)
	return train.CheckMemory(train.MemoryNeed{Flag: "batch", Got: batch,
		Bytes: train.ForwardBytes(r.Config.Arch, r.Config.Stem, m, ds.H, ds.W, 1),
		What:  fmt.Sprintf("for %d images at once through the encoder's first layer", m)})
}

// stepFlag selects a checkpoint kept by train --keep-checkpoints.
var stepFlag = &cli.IntFlag{Name: "step", Value: -1, DefaultText: "the latest checkpoint",
	Usage: "evaluate the checkpoint of this step (kept by train --keep-checkpoints)"}
