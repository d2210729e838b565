package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/analysis"
	"github.com/duel-ssl/duel/duel/data"
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
			analyzeFilesHelp() +
			"Memory fields are null when the method has no memory; intra_class_variance,\n" +
			"inter_class_similarity, their per-class lists and classes when the test split holds one\n" +
			"class (each said so in report.md). .analyze.lock in the output directory is held while the\n" +
			"command runs (a second analysis there is refused); report.md and analysis.json are removed\n" +
			"first and written last.\n" +
			"--json prints {\"memory_class_entropy\", \"intra_class_variance\", \"inter_class_similarity\", \"out_dir\", \"plots\", ...}.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "run directory written by duelctl train (required)"},
			evalDataFlag,
			&cli.StringFlag{Name: "layer", Value: "projector", Usage: "test features analysed: projector (the latent space of the loss and the memory; backbone when the method has none) or backbone"},
			&cli.IntFlag{Name: "limit", Value: 2000, Usage: "test images analysed, balanced over the classes, at least 2 a class (0 = the whole split, for comparisons with the paper's Table 2: 200 images a class leave sampling noise in the class centroids)"},
			&cli.IntFlag{Name: "batch", Value: 256, Usage: "feature extraction batch"},
			&cli.IntFlag{Name: "tsne-points", Value: 1000, Usage: "points of each t-SNE plot (balanced subset of the test features; evenly spaced memory rows), at least 4; 0 = no t-SNE"},
			&cli.IntFlag{Name: "tsne-iters", Value: ts.Iterations, Usage: "t-SNE iterations"},
			&cli.Float64Flag{Name: "perplexity", Value: ts.Perplexity, Usage: "t-SNE perplexity"},
			&cli.Uint64Flag{Name: "seed", Value: 0, Usage: "seed of the t-SNE random initialisation (with --tsne-init random)"},
			&cli.StringFlag{Name: "tsne-init", Value: "pca", Usage: "t-SNE initialisation: pca or random"},
			analyzeStepFlag,
			modelDeviceFlag,
			jsonFlag,
		}, tsneMethodFlags()...),
		Action: runAnalyze,
	}
}

// analyzePlot is a plot duelctl analyze writes: its file name, its
// caption in report.md, and what --help says it shows.
type analyzePlot struct{ File, Caption, Help string }

// analyzePlots lists every plot duelctl analyze writes, in report.md's
// order. --help, report.md's captions and the removal of the plots an
// analysis did not draw this time all derive from it.
var analyzePlots = []analyzePlot{
	{"tsne_test.png", "t-SNE of test features", "t-SNE of the test features (not with --tsne-points 0)"},
	{"class_frequency.png", "Class frequency in memory (descending)", "rows of each class in memory, descending (labelled memory)"},
	{"memory_age.png", "Age of the memory rows", "histogram of the memory rows' ages (steps)"},
	{"memory_uses.png", "How often each memory row was drawn as a negative", "histogram of the memory rows' uses as negatives"},
	{"tsne_memory.png", "t-SNE of the memory rows", "t-SNE of the memory rows (not with --tsne-points 0)"},
	{"memory_classes.png", "Rows of each class in memory over training", "rows of each class in memory against the step (metrics.jsonl)"},
	{"training_curves.png", "Training curves (metrics.jsonl)", "loss, learning rate, throughput, ... against the step (metrics.jsonl)"},
}

// analyzeStepDir is the directory of a run under which analyze --step N
// writes, into analyzeStepDir/step-NNNNNNN, named as train's kept
// checkpoints (train.KeptName).
const analyzeStepDir = "analysis"

// analyzeStepPattern is how --help shows the subdirectory of
// analyzeStepDir for a step (train.KeptName).
const analyzeStepPattern = "step-NNNNNNN"

// analyzeOutDir returns where analyze writes for the run dir: the run
// directory itself for its latest checkpoint, dir/analysis/step-NNNNNNN
// for a checkpoint chosen with --step.
func analyzeOutDir(dir string, step int, stepSet bool) string {
	if !stepSet {
		return dir
	}
	return filepath.Join(dir, analyzeStepDir, train.KeptName(step))
}

// analyzeFilesHelp returns the lines of analyze --help naming the files it
// writes, from analyzePlots.
func analyzeFilesHelp() string {
	var b strings.Builder
	b.WriteString("Writes atomically into the run directory (with --step N into RUN/" + analyzeStepDir + "/" +
		analyzeStepPattern + ", zero-padded as the kept\n" +
		"checkpoints; the run's own report is left as it was), only the plots that apply to the run:\n")
	w := 0
	for _, p := range analyzePlots {
		w = max(w, len(p.File))
	}
	for _, p := range analyzePlots {
		fmt.Fprintf(&b, "  %-*s  %s\n", w, p.File, p.Help)
	}
	fmt.Fprintf(&b, "  %-*s  the --json object below\n  %-*s  the measures, tables and the plots above\n", w, "analysis.json", w, "report.md")
	b.WriteString("A plot of that list not drawn this time (t-SNE skipped, no memory, no metrics.jsonl) has its file from\n" +
		"an earlier analysis removed, so that every plot beside report.md is of this analysis. The parts drawn\n" +
		"from metrics.jsonl stop at the step analysed.\n")
	return b.String()
}

// analyzeStepFlag is --step of analyze: stepFlag, saying where the
// analysis goes.
var analyzeStepFlag = &cli.IntFlag{Name: "step", Value: -1, DefaultText: "the latest checkpoint",
	Usage: "analyse the checkpoint of this step (kept by train --keep-checkpoints), writing into RUN/" + analyzeStepDir + "/" +
		analyzeStepPattern + " (NNNNNNN the step, zero-padded as checkpoints/step-NNNNNNN), not into RUN"}

// analyzeResult is the --json object of duelctl analyze (also analysis.json).
type analyzeResult struct {
	Run string `json:"run"`
	// OutDir is where the plots, report.md and analysis.json were written.
	OutDir             string   `json:"out_dir"`
	Step               int      `json:"step"`
	Method             string   `json:"method"`
	Layer              string   `json:"layer"`
	TestSamples        int      `json:"test_samples"`
	MemoryClassEntropy *float64 `json:"memory_class_entropy"`
	// StreamClassEntropy is the class entropy of the run's training stream,
	// the memory's reference (null when unknown: a long-tailed subset).
	StreamClassEntropy *float64 `json:"stream_class_entropy"`
	MemoryClassCounts  []int    `json:"memory_class_counts"`
	MemoryRows         int      `json:"memory_rows"`
	// MemoryAge: the rows' ages (steps) and negative uses at the checkpoint.
	MemoryAge *analysis.MemoryAge `json:"memory_age,omitempty"`
	// IntraClassVariance and InterClassSimilarity are null when the test
	// split holds fewer than 2 classes, where they are undefined.
	IntraClassVariance   *float64  `json:"intra_class_variance"`
	InterClassSimilarity *float64  `json:"inter_class_similarity"`
	IntraClassPerClass   []float64 `json:"intra_class_variance_per_class"`
	InterClassPerClass   []float64 `json:"inter_class_similarity_per_class"`
	Classes              []int     `json:"classes"`
	TSNEMethod           string    `json:"tsne_method,omitempty"`
	TSNEKLTest           *float64  `json:"tsne_kl_test,omitempty"`
	TSNEKLMemory         *float64  `json:"tsne_kl_memory,omitempty"`
	Plots                []string  `json:"plots"`
	Report               string    `json:"report"`
	Seconds              float64   `json:"seconds"`
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
	case points < 0 || points > 0 && points < minTSNEPoints:
		return flagError("tsne-points", points, fmt.Sprintf("0 (no t-SNE) or at least %d (the perplexity of N points is at most (N-1)/3: fewer have no neighbourhood to keep)", minTSNEPoints))
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
	out := analyzeOutDir(dir, r.Step, c.IsSet("step"))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("--step %d: making the analysis directory: %w", r.Step, err)
	}
	release, err := lockOutputs(out, analyzeLock, "analyze")
	if err != nil {
		return err
	}
	defer release()
	if err := removeDescriptors(out, "report.md", "analysis.json"); err != nil {
		return err
	}
	rep := &analysis.Report{Run: dir, Method: r.Config.Method, Dataset: r.Config.Dataset, Arch: r.Config.Arch, Step: r.Step, Layer: layer}
	if c.String("layer") != layer {
		rep.Notes = append(rep.Notes, fmt.Sprintf("method %s has no projector: backbone features analysed", r.Config.Method))
	}
	res := analyzeResult{Run: dir, OutDir: out, Step: r.Step, Method: r.Config.Method, Layer: layer, Plots: []string{}}

	// Latent space: test features.
	test, ds, err := extractSplit(c, r, false, layer, c.Int("limit"), c.Int("batch"))
	if err != nil {
		return err
	}
	rep.ClassNames, rep.TestRows = ds.Classes, test.N
	res.TestSamples = test.N
	if l := c.Int("limit"); l > 0 && l < 2*len(ds.Classes) {
		// One image of a class: its intra-class variance is 0 by construction.
		return flagError("limit", l, fmt.Sprintf("at least 2 test images per class (2 x %d classes = %d), or 0 for the whole split", len(ds.Classes), 2*len(ds.Classes)))
	}
	if n := classesPresent(test.Labels); n < 2 {
		// No inter-class similarity; the memory is analysed all the same.
		rep.Notes = append(rep.Notes, fmt.Sprintf("the test split holds %d class: the latent-space measures need 2 at least (intra-class variance and inter-class similarity are null)", n))
	} else {
		cs, err := analysis.Cluster(test)
		if err != nil {
			return fmt.Errorf("test features of run %s: %w", dir, err)
		}
		for i, n := range cs.Counts {
			if n < 2 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("class %s has %d test image: its intra-class variance is 0 by construction, which lowers the mean", ds.Classes[cs.Classes[i]], n))
			}
		}
		rep.Cluster = cs
		res.IntraClassVariance, res.InterClassSimilarity = &cs.MeanIntraVariance, &cs.MeanInterSimilarity
		res.IntraClassPerClass, res.InterClassPerClass, res.Classes = cs.IntraVariance, cs.InterSimilarity, cs.Classes
	}
	drawn := map[string]bool{}
	figure := func(file string) {
		drawn[file] = true
		caption := file
		for _, p := range analyzePlots {
			if p.File == file {
				caption = p.Caption
			}
		}
		rep.Figures = append(rep.Figures, analysis.Figure{File: file, Caption: caption})
		res.Plots = append(res.Plots, filepath.Join(out, file))
	}
	if points > 0 {
		res.TSNEMethod = tcfg.Method.String()
		sub := test.Subset(eval.BalancedSubset(test.Labels, points))
		kl, err := tsnePlot(c, filepath.Join(out, "tsne_test.png"), fmt.Sprintf("t-SNE of %s features of %d test images (step %d)", layer, sub.N, r.Step), sub, ds.Classes, tcfg)
		if err != nil {
			return err
		}
		res.TSNEKLTest = &kl
		figure("tsne_test.png")
	} else {
		rep.Notes = append(rep.Notes, "t-SNE skipped (--tsne-points 0): no tsne_test.png, no tsne_memory.png")
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
			if p, err := data.ClassProbs(len(counts), data.SamplerConfig{Profile: data.Profile(r.Config.Imbalance),
				RhoMax: r.Config.RhoMax, DominantClass: r.Config.DominantClass, ImbalanceRatio: r.Config.ImbalanceRatio}); err == nil {
				hs := analysis.Entropy(p)
				res.StreamClassEntropy, rep.StreamEntropy = &hs, &hs
			}
			if err := analysis.PlotClassFrequency(filepath.Join(out, "class_frequency.png"),
				fmt.Sprintf("Class frequency in memory (%s, K=%d, step %d, H=%.3f nats)", r.Config.Policy, r.Memory.Size(), r.Step, h), counts, ds.Classes); err != nil {
				return err
			}
			figure("class_frequency.png")
		}
		if r.Memory.Len() > 0 {
			if err := memoryAgePlots(r, out, rep, figure); err != nil {
				return err
			}
			res.MemoryAge = rep.MemoryAge
		}
		if points > 0 && r.Memory.Len() >= minTSNEPoints {
			mf := memoryFeatures(r, labelled)
			names := ds.Classes
			if !labelled {
				names = []string{"unlabelled"}
			}
			kl, err := tsnePlot(c, filepath.Join(out, "tsne_memory.png"), fmt.Sprintf("t-SNE of %d memory rows (step %d)", min(points, mf.N), r.Step), mf.Subset(evenlySpaced(mf.N, points)), names, tcfg)
			if err != nil {
				return err
			}
			res.TSNEKLMemory = &kl
			figure("tsne_memory.png")
		} else if points > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("no t-SNE of the memory: %d row(s), expected %d at least", r.Memory.Len(), minTSNEPoints))
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
		// The log up to the checkpoint analysed: a kept checkpoint's
		// analysis shows nothing of the later steps.
		total := len(m.Records)
		m = m.UpTo(float64(r.Step))
		rep.LoggedSteps = len(m.Records)
		if total > len(m.Records) {
			rep.LoggedTotal = total
		}
		if v, ok := m.Last("loss"); ok {
			rep.LastLoss = &v
		}
		if err := classCountsPlot(r, out, ds.Classes, figure); err != nil {
			rep.Notes = append(rep.Notes, "memory classes over training: "+err.Error())
		} else if r.Memory != nil && !drawn["memory_classes.png"] {
			rep.Notes = append(rep.Notes, "no memory_class_counts in "+train.MetricsFile+" up to this step: no memory_classes.png")
		}
		if len(m.Records) > 0 {
			if _, err := analysis.PlotTrainingCurves(filepath.Join(out, "training_curves.png"), m); err == nil {
				figure("training_curves.png")
			} else {
				rep.Notes = append(rep.Notes, "training curves: "+err.Error())
			}
		}
	}

	// Plots an earlier analysis drew here and this one did not: gone, so
	// that report.md is beside its own plots only.
	if err := removeStalePlots(out, drawn); err != nil {
		return err
	}
	res.Report = filepath.Join(out, "report.md")
	res.Seconds = time.Since(start).Seconds()
	if err := analysis.WriteFileAtomic(res.Report, []byte(rep.Markdown())); err != nil {
		return err
	}
	if err := atomicfile.WriteJSON(filepath.Join(out, "analysis.json"), res); err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "run %s (step %d, %s features of %d test images)\n", dir, r.Step, layer, test.N)
	if res.MemoryClassEntropy != nil {
		fmt.Fprintf(w, "memory class entropy: %.4f nats (%d rows)\n", *res.MemoryClassEntropy, res.MemoryRows)
	} else {
		fmt.Fprintf(w, "memory class entropy: n/a (%s)\n", rep.MemoryNote)
	}
	if res.IntraClassVariance != nil {
		fmt.Fprintf(w, "intra-class variance: %.4f\ninter-class similarity: %.4f\n", *res.IntraClassVariance, *res.InterClassSimilarity)
	} else {
		fmt.Fprintln(w, "intra-class variance and inter-class similarity: n/a (fewer than 2 classes in the test split)")
	}
	fmt.Fprintf(w, "wrote %s, analysis.json and %d plots into %s (%.1f s)\n", res.Report, len(res.Plots), out, res.Seconds)
	if out != dir {
		fmt.Fprintf(w, "(the analysis of the kept checkpoint of step %d; the run directory's report.md and plots are left as they were)\n", r.Step)
	}
	return emitJSON(c, res)
}

// removeStalePlots removes from dir the files of analyzePlots not in drawn,
// left by an earlier analysis; a file already absent is fine.
func removeStalePlots(dir string, drawn map[string]bool) error {
	for _, p := range analyzePlots {
		if drawn[p.File] {
			continue
		}
		path := filepath.Join(dir, p.File)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s, a plot of an earlier analysis not drawn this time: %w", path, err)
		}
	}
	return nil
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

// classesPresent returns the number of distinct labels.
func classesPresent(labels []int32) int {
	seen := map[int32]bool{}
	for _, l := range labels {
		seen[l] = true
	}
	return len(seen)
}

// minTSNEPoints is the fewest points a t-SNE embeds: with perplexity at
// most (N-1)/3, fewer points than 4 have a perplexity below 1.
const minTSNEPoints = 4

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
