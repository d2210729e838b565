package train

import (
	"fmt"
	"sort"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/data/augment"
	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/internal/splitmix"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/resnet"
	"github.com/duel-ssl/duel/nn/safetensors"
	"github.com/duel-ssl/duel/tensor"
)

// Seed streams derived from Config.Seed.
const (
	seedModel = 1 + iota
	seedSampler
	seedLoader
	seedMethod
	seedMemView
)

// sslConfig translates c into the methods' configuration.
func sslConfig(c *Config, images ssl.ImageSource) ssl.Config {
	arch, seed, imagenet := c.Arch, splitmix.Derive(c.Seed, seedModel), c.Stem == "imagenet"
	return ssl.Config{
		NewEncoder: func() (ssl.Encoder, error) {
			return resnet.New(arch, resnet.Options{Seed: seed, ImageNetStem: imagenet})
		},
		ProjDim: c.ProjDim, ProjHidden: c.ProjHidden, HeadBN: c.HeadBN, PredHidden: c.PredHidden,
		Tau: c.Tau, Eps: c.Eps, EMA: c.EMA, BarlowLambda: c.BarlowLambda,
		Negatives: c.Negatives, MemorySize: c.MemorySize, Policy: c.Policy, Admission: c.Admission,
		SafeUpdate: c.SafeUpdate, MaxAge: c.MaxAge, MemRefresh: c.MemRefresh, MemNegatives: c.MemNegatives, MemoryFrom: c.MemoryFrom,
		ShuffleBN: c.ShuffleBN, BNSplits: c.BNSplits, SyncBN: c.SyncBN,
		Seed:   splitmix.Derive(c.Seed, seedMethod),
		Images: images,
	}
}

// NewMethod builds the method of c; images supplies the memory samples
// D-SimCLR re-embeds (nil: none, an error if they are needed).
func NewMethod(c *Config, images ssl.ImageSource) (ssl.Method, error) {
	return NewMethodIn(c, images, nil)
}

// NewMethodIn is NewMethod for a rank of the data-parallel group comm
// (nil: one process).
func NewMethodIn(c *Config, images ssl.ImageSource, comm dist.Comm) (ssl.Method, error) {
	return NewMethodFor(c, MethodSetup{Images: images, Comm: comm})
}

// MethodSetup is where and how NewMethodFor builds a method.
type MethodSetup struct {
	// Images supplies the memory samples D-SimCLR re-embeds (nil: none,
	// an error if they are needed).
	Images ssl.ImageSource
	// Comm is the data-parallel group of this rank (nil: one process).
	Comm dist.Comm
	// Device is where the method's parts compute ("" or tensor.CPU: the
	// host); a backend that cannot run them is refused, naming what it
	// lacks (*CapabilityError).
	Device tensor.Device
	// DUELPolicy builds the memory's DUEL policy (Options.DUELPolicy;
	// nil: memory.NewDUEL).
	DUELPolicy func(adm memory.Admission) memory.Policy
}

// NewMethodFor builds the method of c as Train does, placed on s.Device.
func NewMethodFor(c *Config, s MethodSetup) (ssl.Method, error) {
	images := s.Images
	if images == nil {
		images = ssl.ImageSourceFunc(func([]float32, []int64, int) error {
			return fmt.Errorf("no dataset attached to re-embed memory samples")
		})
	}
	sc := sslConfig(c, images)
	sc.Comm, sc.DUELPolicy = s.Comm, s.DUELPolicy
	m, err := ssl.New(c.Method, sc)
	if err != nil {
		return nil, err
	}
	if err := placeMethod(m, s.Device, fmt.Sprintf("%s (%s)", c.Arch, c.Method)); err != nil {
		return nil, err
	}
	return m, nil
}

// normStats returns the per-channel normalisation of the training views.
func normStats(c *Config, ds *data.Dataset) (mean, std []float32) {
	mean, std, ok := data.NormStats(c.Dataset)
	if !ok {
		mean, std = ds.MeanStd()
	}
	if ds.C == 3 && len(mean) == 1 { // a grayscale set made RGB
		mean = []float32{mean[0], mean[0], mean[0]}
		std = []float32{std[0], std[0], std[0]}
	}
	return mean, std
}

// datasetImages fetches memory samples from the dataset by id, through the
// training augmentations (a fresh draw per step and slot) or plain.
type datasetImages struct {
	ds   *data.Dataset
	pipe *augment.Pipeline
	seed uint64
	ws   augment.Workspace
}

// Fetch implements ssl.ImageSource.
func (d *datasetImages) Fetch(dst []float32, ids []int64, step int) error {
	oh, ow := d.pipe.OutSize(d.ds.H, d.ds.W)
	per := d.ds.C * oh * ow
	if len(dst) != len(ids)*per {
		return fmt.Errorf("fetching %d images: buffer of %d values, expected %d", len(ids), len(dst), len(ids)*per)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= d.ds.Len() {
			return fmt.Errorf("sample id %d out of the dataset's %d images", id, d.ds.Len())
		}
		r := splitmix.New(splitmix.Derive(d.seed, uint64(step), uint64(i)))
		d.pipe.Apply(dst[i*per:(i+1)*per], d.ds.Image(int(id)), d.ds.H, d.ds.W, d.ds.C, &r, &d.ws)
	}
	return nil
}

// modelTensors lists every tensor of m for model.safetensors: the encoder's
// under torchvision's names, the other parts under their prefix, copied
// to the host from the model's device (shared, not copied, on the CPU).
// num_batches_tracked is written as I64.
func modelTensors(m ssl.Method) ([]safetensors.Tensor, error) {
	var out []safetensors.Tensor
	for _, p := range m.Parts() {
		sd, err := nn.StateDictOf(p.Module).ToHost()
		if err != nil {
			return nil, fmt.Errorf("saving the model: %w", err)
		}
		out = append(out, safetensors.FromStateDict(p.Prefix, sd)...)
	}
	return out, nil
}

// loadModel copies the tensors of a model.safetensors file into m's parts.
// Every tensor of every part must be present, and nothing else, and every
// value finite (ErrDiverged).
func loadModel(m ssl.Method, f *safetensors.File, path string) error {
	if name, n := nonFinite(f.Tensors); n > 0 {
		return fmt.Errorf("%s: tensor %q holds %d %w (saved before duelctl refused to save such a model: train the run again with a lower --lr)", path, name, n, ErrDiverged)
	}
	used := map[string]bool{}
	for _, p := range m.Parts() {
		prefix := ""
		if p.Prefix != "" {
			prefix = p.Prefix + "."
		}
		var sd nn.StateDict
		for _, e := range nn.StateDictOf(p.Module) {
			t, ok := f.Get(prefix + e.Name)
			if !ok {
				return fmt.Errorf("%s: tensor %q missing (method %s)", path, prefix+e.Name, m.Name())
			}
			used[prefix+e.Name] = true
			v, err := t.StateEntry()
			if err != nil {
				return fmt.Errorf("%s: tensor %q: %w", path, t.Name, err)
			}
			v.Name, v.Int64 = e.Name, e.Int64
			sd = append(sd, v)
		}
		if err := nn.LoadStateDict(p.Module, sd, true); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	var extra []string
	for _, n := range f.Names() {
		if !used[n] {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("%s: unexpected tensors %v for method %s", path, extra, m.Name())
	}
	return nil
}
