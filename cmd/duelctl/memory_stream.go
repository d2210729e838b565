package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/eval"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/atomicfile"
	"github.com/duel-ssl/duel/internal/npy"
	"github.com/duel-ssl/duel/tensor"
)

func memoryStreamCommand() *cli.Command {
	return &cli.Command{
		Name:  "stream",
		Usage: "embed a class-imbalanced stream of a run's training images with its frozen encoder, for memory replay",
		Description: "Draws --rows images from the run's training set with the class-imbalanced sampler\n" +
			"(--imbalance, --rho-max, --dominant-class, --stream-seed), in the order training would see\n" +
			"them, embeds their plain (unaugmented) views with the run's encoder in evaluation mode\n" +
			"(--layer projector: the space of the memory; backbone: the pooled features) and writes\n" +
			"OUT/features.npy (rows x D float32), OUT/labels.npy (int64) and OUT/stream.json. Replaying\n" +
			"them (duelctl memory replay --features OUT/features.npy --labels OUT/labels.npy ...) shows\n" +
			"what a policy does on learned features without the feedback of training.\n" +
			"--json prints {\"out\", \"run\", \"step\", \"layer\", \"rows\", \"dim\", \"imbalance\", the profile's\n" +
			"settings (dominant: \"rho_max\", \"dominant_class\"; longtail, longtail-subset: \"imbalance_ratio\",\n" +
			"\"dominant_class\"; uniform: none), \"stream_seed\", \"stream_entropy\", \"class_counts\"}, as\n" +
			"OUT/stream.json. OUT/.stream.lock is held while the command runs: a second stream into OUT is refused.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "run directory written by duelctl train (required)"},
			stepFlag,
			&cli.StringFlag{Name: "layer", Value: "projector", Usage: "features: projector (the memory's space; backbone when the method has none) or backbone"},
			&cli.StringFlag{Name: "imbalance", Value: "dominant", Usage: "class profile: dominant, longtail, longtail-subset or uniform"},
			&cli.Float64Flag{Name: "rho-max", Value: 0.75, Usage: "probability of the dominant class (dominant profile)"},
			&cli.IntFlag{Name: "dominant-class", Value: 0, Usage: "index of the dominant class"},
			&cli.Float64Flag{Name: "imbalance-ratio", Value: 100, Usage: "head/tail ratio (longtail profiles)"},
			&cli.IntFlag{Name: "rows", Value: 2048 + 300*64, Usage: "rows of the stream (default: a memory of 2048 plus 300 batches of 64)"},
			&cli.Uint64Flag{Name: "stream-seed", Value: 7, Usage: "seed of the sampler"},
			&cli.IntFlag{Name: "batch", Value: 256, Usage: "images per encoder call"},
			&cli.StringFlag{Name: "out", Usage: "output directory (required)"},
			deviceFlag,
			jsonFlag,
		},
		Action: runMemoryStream,
	}
}

// streamResult is the --json object of memory stream (also stream.json).
// Of the sampler's settings it records those the --imbalance profile uses
// (streamProfileSettings); the others are absent.
type streamResult struct {
	Out       string `json:"out"`
	Run       string `json:"run"`
	Step      int    `json:"step"`
	Layer     string `json:"layer"`
	Rows      int    `json:"rows"`
	Dim       int    `json:"dim"`
	Imbalance string `json:"imbalance"`
	// RhoMax is --rho-max, the dominant class's probability: dominant
	// profile only.
	RhoMax *float64 `json:"rho_max,omitempty"`
	// DominantClass is --dominant-class, the class of rank 0: the dominant
	// class of the dominant profile, the head of the long-tailed ones;
	// absent for uniform.
	DominantClass *int `json:"dominant_class,omitempty"`
	// ImbalanceRatio is --imbalance-ratio, the head/tail ratio: longtail
	// and longtail-subset profiles only.
	ImbalanceRatio *float64 `json:"imbalance_ratio,omitempty"`
	StreamSeed     uint64   `json:"stream_seed"`
	StreamEntropy  float64  `json:"stream_entropy"`
	ClassCounts    []int    `json:"class_counts"`
}

// streamProfileSettings sets in res the settings of cfg that shape a
// stream of cfg's profile (package data's Sampler): rho-max and the
// dominant class for dominant; the imbalance ratio and the dominant class
// (the head) for longtail and longtail-subset; none for uniform.
func streamProfileSettings(res *streamResult, cfg data.SamplerConfig) {
	res.RhoMax, res.DominantClass, res.ImbalanceRatio = nil, nil, nil
	switch cfg.Profile {
	case data.Dominant:
		res.RhoMax = &cfg.RhoMax
		res.DominantClass = &cfg.DominantClass
	case data.LongTail, data.LongTailSubset:
		res.ImbalanceRatio = &cfg.ImbalanceRatio
		res.DominantClass = &cfg.DominantClass
	}
}

func runMemoryStream(c *cli.Context) error {
	if err := checkDevice(c); err != nil {
		return err
	}
	out := c.String("out")
	switch {
	case out == "":
		return flagError("out", `""`, "an output directory")
	case checkOutDir("out", out) != nil:
		return checkOutDir("out", out)
	case c.Int("rows") < 1:
		return flagError("rows", c.Int("rows"), "an integer >= 1")
	case c.Int("batch") < 1:
		return flagError("batch", c.Int("batch"), "an integer >= 1")
	}
	// The sampler's settings, checked as duelctl train checks them.
	dominant := c.Int("dominant-class")
	if err := train.ValidateSampler(c.String("imbalance"), c.Float64("rho-max"), dominant, c.Float64("imbalance-ratio")); err != nil {
		return err
	}
	r, err := loadRunFlag(c)
	if err != nil {
		return err
	}
	layer, err := runLayer(c, r, c.String("layer"), true)
	if err != nil {
		return err
	}
	ds, err := r.OpenDataset(true)
	if err != nil {
		return fmt.Errorf("--run %s: %w", r.Dir, err)
	}
	ds = ds.ToRGB()
	if err := train.CheckDominantClass(dominant, r.Config.Dataset, ds.NumClasses()); err != nil {
		return err
	}
	n := c.Int("rows")
	if err := checkStreamMemory(r, ds, layer, n); err != nil {
		return err
	}
	if err := checkExtractBatch(r, ds, c.Int("batch"), n); err != nil {
		return err
	}
	release, err := lockOutputs(out, ".stream.lock", "memory stream")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer release()
	cfg := data.SamplerConfig{
		Profile: data.Profile(c.String("imbalance")), RhoMax: c.Float64("rho-max"), DominantClass: dominant,
		ImbalanceRatio: c.Float64("imbalance-ratio"), Seed: c.Uint64("stream-seed"),
	}
	s, err := data.NewSampler(ds.Labels, ds.NumClasses(), cfg)
	if err != nil {
		return err // the flags were checked above: the dataset's own problem (a class without images), "sampler: ..."
	}
	idx := make([]int, n)
	for i := range idx {
		id, _ := s.Draw(int64(i/64), i%64) // the order of training batches of 64
		idx[i] = int(id)
	}
	mean, std, err := r.Normalization()
	if err != nil {
		return err
	}
	batch := min(c.Int("batch"), n) // a larger batch is the whole stream at once
	f, err := eval.Extract(ds.Subset(idx), func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return r.Embed(x, layer, batch)
	}, eval.ExtractOptions{Mean: mean, Std: std, Batch: batch})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	// labels.npy goes too: beside new features it would pair them with
	// another stream's labels.
	if err := removeDescriptors(out, "stream.json", "labels.npy"); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	labels := make([]int64, n)
	counts := make([]int, ds.NumClasses())
	for i, l := range f.Labels {
		labels[i] = int64(l)
		counts[l]++
	}
	if err := npy.WriteFile(filepath.Join(out, "features.npy"), &npy.Array{Shape: []int{f.N, f.D}, Float32: f.X}); err != nil {
		return err
	}
	if err := npy.WriteFile(filepath.Join(out, "labels.npy"), &npy.Array{Shape: []int{n}, Int64: labels}); err != nil {
		return err
	}
	res := streamResult{Out: out, Run: r.Dir, Step: r.Step, Layer: layer, Rows: n, Dim: f.D,
		Imbalance: c.String("imbalance"), StreamSeed: c.Uint64("stream-seed"),
		StreamEntropy: memory.Entropy(counts), ClassCounts: counts}
	streamProfileSettings(&res, cfg)
	if err := atomicfile.WriteJSON(filepath.Join(out, "stream.json"), res); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "wrote %d rows of %d %s features of run %s (step %d) to %s; stream class entropy %.4f nats, counts %v\n",
		n, f.D, layer, r.Dir, r.Step, out, res.StreamEntropy, counts)
	return emitJSON(c, res)
}

// checkStreamMemory refuses a --rows whose stream cannot fit this
// machine's memory: per row its index, a copy of its image, its feature
// of the layer's width and its labels.
func checkStreamMemory(r *train.Run, ds *data.Dataset, layer string, rows int) error {
	dim := r.FeatureDim
	if layer == "projector" {
		dim = r.Config.ProjDim
	}
	perRow := 8 + float64(ds.ImageSize()) + 4*float64(dim) + 4 + 4 + 8
	return train.CheckMemory(train.MemoryNeed{Flag: "rows", Got: rows, Bytes: float64(rows) * perRow,
		What: fmt.Sprintf("for the stream's images and %d-value features", dim)})
}
