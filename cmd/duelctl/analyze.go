package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/analysis"
	"github.com/duel-ssl/duel/duel/eval"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/atomicfile"
)

func analyzeCommand() *cli.Command {
	ts := analysis.DefaultTSNEConfig()
	return &cli.Command{
		Name:      "analyze",
		Usage:     "analyse a run's memory and latent space; write plots and report.md",
		ArgsUsage: " ",
		Description: "Measures, as the paper (Section 5, Table 2, Appendix F.2):\n" +
			"  memory_class_entropy    entropy (nats) of the classes of the rows held in memory\n" +
			"  intra_class_variance    1/|C| Σ_c E[(r̄_cᵀ f(x) − 1)²] on L2-normalised test features f(x),\n" +
			"                          r̄_c the normalised mean of class c\n" +
			"  inter_class_similarity  1/(|C|(|C|−1)) Σ_c Σ_{c'≠c} r̄_cᵀ r̄_c'\n" +
			"and writes into the run directory (atomically): tsne_test.png, tsne_memory.png,\n" +
			"class_frequency.png (memory), training_curves.png (metrics.jsonl), analysis.json and report.md.\n" +
			"Memory fields are null when the method has no memory (said so in report.md).\n" +
			"--json prints {\"memory_class_entropy\", \"intra_class_variance\", \"inter_class_similarity\", ...}.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "run directory written by duelctl train (required)"},
			evalDataFlag,
			&cli.StringFlag{Name: "layer", Value: "projector", Usage: "test features analysed: projector (the latent space of the loss and the memory; backbone when the method has none) or backbone"},
			&cli.IntFlag{Name: "limit", Value: 2000, Usage: "test images analysed, balanced over the classes (0 = the whole split)"},
			&cli.IntFlag{Name: "batch", Value: 256, Usage: "feature extraction batch"},
			&cli.IntFlag{Name: "tsne-points", Value: 1000, Usage: "points of each t-SNE plot (balanced subset of the test features; evenly spaced memory rows); 0 = no t-SNE"},
			&cli.IntFlag{Name: "tsne-iters", Value: ts.Iterations, Usage: "t-SNE iterations"},
			&cli.Float64Flag{Name: "perplexity", Value: ts.Perplexity, Usage: "t-SNE perplexity"},
			&cli.Uint64Flag{Name: "seed", Value: 0, Usage: "seed of the t-SNE random initialisation (with --tsne-init random)"},
			&cli.StringFlag{Name: "tsne-init", Value: "pca", Usage: "t-SNE initialisation: pca or random"},
			stepFlag,
			modelDeviceFlag,
			jsonFlag,
		}, tsneMethodFlags()...),
		Action: runAnalyze,
	}
}

// analyzeResult is the --json object of duelctl analyze (also analysis.json).
type analyzeResult struct {
	Run                string   `json:"run"`
	Step               int      `json:"step"`
	Method             string   `json:"method"`
	Layer              string   `json:"layer"`
	TestSamples        int      `json:"test_samples"`
	MemoryClassEntropy *float64 `json:"memory_class_entropy"`
	MemoryClassCounts  []int    `json:"memory_class_counts"`
	MemoryRows         int      `json:"memory_rows"`
	// MemoryAge: the rows' ages (steps) and negative uses at the checkpoint.
	MemoryAge            *analysis.MemoryAge `json:"memory_age,omitempty"`
	IntraClassVariance   float64             `json:"intra_class_variance"`
	InterClassSimilarity float64             `json:"inter_class_similarity"`
	IntraClassPerClass   []float64           `json:"intra_class_variance_per_class"`
	InterClassPerClass   []float64           `json:"inter_class_similarity_per_class"`
	Classes              []int               `json:"classes"`
	TSNEMethod           string              `json:"tsne_method,omitempty"`
	TSNEKLTest           *float64            `json:"tsne_kl_test,omitempty"`
	TSNEKLMemory         *float64            `json:"tsne_kl_memory,omitempty"`
	Plots                []string            `json:"plots"`
	Report               string              `json:"report"`
	Seconds              float64             `json:"seconds"`
}

func runAnalyze(c *cli.Context) error {
	if _, err := computeDevice(c); err != nil {
		return err
	}
	if c.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only, see --help)", c.Args().First())
	}
	tcfg := analysis.DefaultTSNEConfig()
	tcfg.Iterations, tcfg.Perplexity, tcfg.Seed = c.Int("tsne-iters"), c.Float64("perplexity"), c.Uint64("seed")
	switch init := c.String("tsne-init"); init {
	case "pca":
		tcfg.Init = analysis.InitPCA
	case "random":
		tcfg.Init = analysis.InitRandom
	default:
		return flagError("tsne-init", fmt.Sprintf("%q", init), "pca or random")
	}
	if err := setTSNEMethod(c, &tcfg); err != nil {
		return err
	}
	points := c.Int("tsne-points")
	switch {
	case c.Int("limit") < 0:
		return flagError("limit", c.Int("limit"), "an integer >= 0 (0 = the whole split)")
	case c.Int("batch") <= 0:
		return flagError("batch", c.Int("batch"), "an integer > 0")
	case points < 0:
		return flagError("tsne-points", points, "an integer >= 0 (0 = no t-SNE)")
	case tcfg.Iterations <= 0:
		return flagError("tsne-iters", tcfg.Iterations, "an integer > 0")
	case !(tcfg.Perplexity > 0):
		return flagError("perplexity", tcfg.Perplexity, "a number > 0")
	}
	start := time.Now()
	r, err := loadRunFlag(c)
	if err != nil {
		return err
	}
	layer, err := runLayer(c, r, c.String("layer"), true)
	if err != nil {
		return err
	}
	dir := r.Dir
	rep := &analysis.Report{Run: dir, Method: r.Config.Method, Dataset: r.Config.Dataset, Arch: r.Config.Arch, Step: r.Step, Layer: layer}
	if c.String("layer") != layer {
		rep.Notes = append(rep.Notes, fmt.Sprintf("method %s has no projector: backbone features analysed", r.Config.Method))
	}
	res := analyzeResult{Run: dir, Step: r.Step, Method: r.Config.Method, Layer: layer, Plots: []string{}}

	// Latent space: test features.
	test, ds, err := extractSplit(c, r, false, layer, c.Int("limit"), c.Int("batch"))
	if err != nil {
		return err
	}
	rep.ClassNames, rep.TestRows = ds.Classes, test.N
	res.TestSamples = test.N
	cs, err := analysis.Cluster(test)
	if err != nil {
		if l := c.Int("limit"); l > 0 && l < 2*len(ds.Classes) {
			return flagError("limit", l, fmt.Sprintf("enough test images for 2 classes at least (%v), or 0 for the whole split", err))
		}
		return fmt.Errorf("test features of run %s: %w", dir, err)
	}
	rep.Cluster = cs
	res.IntraClassVariance, res.InterClassSimilarity = cs.MeanIntraVariance, cs.MeanInterSimilarity
	res.IntraClassPerClass, res.InterClassPerClass, res.Classes = cs.IntraVariance, cs.InterSimilarity, cs.Classes
	figure := func(file, caption string) {
		rep.Figures = append(rep.Figures, analysis.Figure{File: file, Caption: caption})
		res.Plots = append(res.Plots, filepath.Join(dir, file))
	}
	if points > 0 {
		res.TSNEMethod = tcfg.Method.String()
		sub := test.Subset(eval.BalancedSubset(test.Labels, points))
		kl, err := tsnePlot(c, filepath.Join(dir, "tsne_test.png"), fmt.Sprintf("t-SNE of %s features of %d test images (step %d)", layer, sub.N, r.Step), sub, ds.Classes, tcfg)
		if err != nil {
			return err
		}
		res.TSNEKLTest = &kl
		figure("tsne_test.png", "t-SNE of test features")
	}

	// Active memory.
	if r.Memory == nil {
		rep.MemoryNote = fmt.Sprintf("method %s has no memory", r.Config.Method)
	} else {
		rep.MemorySize = r.Memory.Size()
		res.MemoryRows = r.Memory.Len()
		rep.Policy = r.Config.Policy
		labels := r.Memory.Labels()
		labelled := len(labels) > 0
		for _, l := range labels {
			if l < 0 || int(l) >= len(ds.Classes) {
				labelled = false
			}
		}
		switch {
		case r.Memory.Len() == 0:
			rep.MemoryNote = "the memory is empty (no training step yet)"
		case !labelled:
			rep.MemoryNote = "the memory rows carry no labels in this dataset's range"
		default:
			counts, err := analysis.ClassCounts(labels, len(ds.Classes))
			if err != nil {
				return fmt.Errorf("memory of run %s: %w", dir, err)
			}
			h := analysis.ClassEntropy(counts)
			res.MemoryClassEntropy, res.MemoryClassCounts, rep.MemoryCounts = &h, counts, counts
			if err := analysis.PlotClassFrequency(filepath.Join(dir, "class_frequency.png"),
				fmt.Sprintf("Class frequency in memory (%s, K=%d, step %d, H=%.3f nats)", r.Config.Policy, r.Memory.Size(), r.Step, h), counts, ds.Classes); err != nil {
				return err
			}
			figure("class_frequency.png", "Class frequency in memory (descending)")
		}
		if r.Memory.Len() > 0 {
			if err := memoryAgePlots(r, rep, figure); err != nil {
				return err
			}
			res.MemoryAge = rep.MemoryAge
		}
		if points > 0 && r.Memory.Len() >= 2 {
			mf := memoryFeatures(r, labelled)
			names := ds.Classes
			if !labelled {
				names = []string{"unlabelled"}
			}
			kl, err := tsnePlot(c, filepath.Join(dir, "tsne_memory.png"), fmt.Sprintf("t-SNE of %d memory rows (step %d)", min(points, mf.N), r.Step), mf.Subset(evenlySpaced(mf.N, points)), names, tcfg)
			if err != nil {
				return err
			}
			res.TSNEKLMemory = &kl
			figure("tsne_memory.png", "t-SNE of the memory rows")
		}
	}

	// Training curves.
	mpath := filepath.Join(dir, train.MetricsFile)
	m, err := analysis.ReadMetrics(mpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rep.Notes = append(rep.Notes, "no "+train.MetricsFile+": no training curves")
	case err != nil:
		return err
	default:
		if m.Truncated {
			rep.Notes = append(rep.Notes, "the last line of "+train.MetricsFile+" was cut short and is ignored")
		}
		rep.LoggedSteps = len(m.Records)
		if v, ok := m.Last("loss"); ok {
			rep.LastLoss = &v
		}
		if err := classCountsPlot(r, ds.Classes, figure); err != nil {
			rep.Notes = append(rep.Notes, "memory classes over training: "+err.Error())
		}
		if len(m.Records) > 0 {
			if _, err := analysis.PlotTrainingCurves(filepath.Join(dir, "training_curves.png"), m); err == nil {
				figure("training_curves.png", "Training curves (metrics.jsonl)")
			} else {
				rep.Notes = append(rep.Notes, "training curves: "+err.Error())
			}
		}
	}

	res.Report = filepath.Join(dir, "report.md")
	res.Seconds = time.Since(start).Seconds()
	if err := analysis.WriteFileAtomic(res.Report, []byte(rep.Markdown())); err != nil {
		return err
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, "analysis.json"), res); err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "run %s (step %d, %s features of %d test images)\n", dir, r.Step, layer, test.N)
	if res.MemoryClassEntropy != nil {
		fmt.Fprintf(w, "memory class entropy: %.4f nats (%d rows)\n", *res.MemoryClassEntropy, res.MemoryRows)
	} else {
		fmt.Fprintf(w, "memory class entropy: n/a (%s)\n", rep.MemoryNote)
	}
	fmt.Fprintf(w, "intra-class variance: %.4f\ninter-class similarity: %.4f\n", res.IntraClassVariance, res.InterClassSimilarity)
	fmt.Fprintf(w, "wrote %s, analysis.json and %d plots (%.1f s)\n", res.Report, len(res.Plots), res.Seconds)
	return emitJSON(c, res)
}

// memoryFeatures returns a copy of the memory rows with their labels, or
// with label 0 for every row when they are not labelled.
func memoryFeatures(r *train.Run, labelled bool) *eval.Features {
	m := r.Memory
	f := &eval.Features{N: m.Len(), D: m.Dim(), X: append([]float32(nil), m.Rows()...), Labels: make([]int32, m.Len())}
	if labelled {
		copy(f.Labels, m.Labels())
	}
	return f
}

// evenlySpaced returns min(k, n) indices spread evenly over [0, n).
func evenlySpaced(n, k int) []int {
	k = min(k, n)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i * n / k
	}
	return idx
}

// tsnePlot embeds f with t-SNE and writes the scatter plot to path. It
// returns the final KL divergence.
func tsnePlot(c *cli.Context, path, title string, f *eval.Features, names []string, cfg analysis.TSNEConfig) (float64, error) {
	if err := checkTSNEMemory(cfg.Method, f.N); err != nil {
		return 0, err
	}
	bar := progressBar(c, cfg.Iterations, "t-SNE "+filepath.Base(path))
	cfg.Progress = func(it int) {
		if bar != nil && it%10 == 0 {
			bar.Set(it)
		}
	}
	res, err := analysis.TSNE(f.X, f.N, f.D, cfg)
	finishBar(bar)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return res.KL, analysis.PlotEmbedding(path, title, res.Y, f.Labels, names)
}
