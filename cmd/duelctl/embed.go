package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/npy"
	"github.com/duel-ssl/duel/tensor"
)

func embedCommand() *cli.Command {
	return &cli.Command{
		Name:  "embed",
		Usage: "compute the features of images with a trained encoder",
		Description: "Reads --input, an N x C x H x W float32 (or float64) .npy of images already normalised\n" +
			"as for training (C = 3, or 1 for a grayscale run: the channel is replicated), runs the\n" +
			"encoder of --run in evaluation mode (BatchNorm running statistics) and writes --out, an\n" +
			"N x D float32 .npy: the globally pooled features before fc (--layer backbone) or the\n" +
			"projector's output, not normalised (--layer projector).\n" +
			"--json prints {\"out\": FILE, \"n\": N, \"dim\": D, \"layer\": ...}.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "run directory written by duelctl train (required)"},
			&cli.StringFlag{Name: "input", Usage: "N x C x H x W .npy of normalised images (required)"},
			&cli.StringFlag{Name: "out", Usage: "output .npy of N x D float32 features (required)"},
			&cli.StringFlag{Name: "layer", Value: "backbone", Usage: "backbone (pooled features before fc) or projector"},
			&cli.IntFlag{Name: "batch", Value: 256, Usage: "images per forward pass"},
			modelDeviceFlag,
			jsonFlag,
		},
		Action: runEmbed,
	}
}

// embedResult is the --json answer of embed.
type embedResult struct {
	Out   string `json:"out"`
	N     int    `json:"n"`
	Dim   int    `json:"dim"`
	Layer string `json:"layer"`
}

func runEmbed(c *cli.Context) error {
	dev, err := computeDevice(c)
	if err != nil {
		return err
	}
	for _, name := range []string{"run", "input", "out"} {
		if c.String(name) == "" {
			return flagError(name, `""`, "a path (required)")
		}
	}
	layer := c.String("layer")
	if layer != "backbone" && layer != "projector" {
		return flagError("layer", fmt.Sprintf("%q", layer), "backbone or projector")
	}
	batch := c.Int("batch")
	if batch < 1 {
		return flagError("batch", batch, "a positive integer")
	}
	if err := checkOutFile("out", c.String("out")); err != nil {
		return err // before the model runs
	}
	run, err := train.LoadRunOn(c.String("run"), -1, dev)
	if ce := (*train.CapabilityError)(nil); errors.As(err, &ce) {
		return ce // names --device itself
	}
	if err != nil {
		return fmt.Errorf("--run: %w", err)
	}
	in := c.String("input")
	a, err := npy.ReadFile(in)
	if err != nil {
		return fmt.Errorf("--input: %w", err)
	}
	mean, _, known := data.NormStats(run.Config.Dataset)
	x, err := embedInput(a, in, known && len(mean) == 1)
	if err != nil {
		return err
	}
	feats, err := run.Embed(x, layer, batch)
	if err != nil {
		return fmt.Errorf("--input %s: %w", in, err)
	}
	data := feats.Contiguous().Data()
	if data == nil { // no images: an N = 0 array of features
		data = []float32{}
	}
	out := &npy.Array{Shape: feats.Shape(), Float32: data}
	if err := npy.WriteFile(c.String("out"), out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	res := embedResult{Out: c.String("out"), N: feats.Dim(0), Dim: feats.Dim(1), Layer: layer}
	fmt.Fprintf(c.App.Writer, "embedded %d images with %s (%s, step %d): %s features of %d values in %s\n",
		res.N, run.Dir, run.Config.Arch, run.Step, layer, res.Dim, res.Out)
	return emitJSON(c, res)
}

// embedInput checks the images array and returns it as an N x 3 x H x W
// float32 tensor. A single channel is replicated, for a run on a grayscale
// dataset (gray) only: the run's views were made RGB that way.
func embedInput(a *npy.Array, file string, gray bool) (*tensor.Tensor, error) {
	if len(a.Shape) != 4 {
		return nil, fmt.Errorf("--input %s: shape %v, expected N x C x H x W", file, a.Shape)
	}
	n, ch, h, w := a.Shape[0], a.Shape[1], a.Shape[2], a.Shape[3]
	switch {
	case ch == 1 && !gray:
		return nil, fmt.Errorf("--input %s: 1 channel, expected 3: the run trained on RGB images (1 channel is for a run on a grayscale dataset, mnist or fashion-mnist)", file)
	case ch != 3 && ch != 1:
		return nil, fmt.Errorf("--input %s: %d channels, expected 3 (or 1 for a run on a grayscale dataset)", file, ch)
	}
	if h < 1 || w < 1 {
		return nil, fmt.Errorf("--input %s: images of %dx%d pixels, expected at least 1x1", file, h, w)
	}
	for i, v := range a.Float64 { // checked before float32 rounds 1e300 to +Inf
		if math.IsNaN(v) || math.Abs(v) > math.MaxFloat32 {
			return nil, fmt.Errorf("--input %s: element %d is %v, expected a finite number within float32's range (|x| <= 3.4e38)", file, i, v)
		}
	}
	vals, err := a.Float32Values()
	if err != nil {
		return nil, fmt.Errorf("--input %s: %w", file, err)
	}
	for i, v := range vals {
		if v != v || v > 3e38 || v < -3e38 {
			return nil, fmt.Errorf("--input %s: element %d is %v, expected a finite number", file, i, v)
		}
	}
	if ch == 1 {
		plane := h * w
		rgb := make([]float32, n*3*plane)
		for i := 0; i < n; i++ {
			for c := 0; c < 3; c++ {
				copy(rgb[(i*3+c)*plane:(i*3+c+1)*plane], vals[i*plane:(i+1)*plane])
			}
		}
		vals = rgb
	}
	return tensor.FromSlice(vals, n, 3, h, w), nil
}
