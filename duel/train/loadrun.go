package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/safetensors"
	"github.com/duel-ssl/duel/tensor"
)

// Run is a training run loaded for evaluation: its configuration, its model
// in evaluation mode (BatchNorm uses its running statistics) and its memory.
type Run struct {
	Dir        string
	Config     Config
	Device     tensor.Device  // where the model is placed and computes
	Step       int            // the step of the loaded checkpoint
	Method     ssl.Method     // every part with its weights, in evaluation mode
	Encoder    ssl.Encoder    // the backbone
	FeatureDim int            // the backbone's feature size
	Projector  nn.Module      // the projector (nil when the method has none)
	Memory     *memory.Memory // nil when the method has none
}

// LoadRun opens the run in dir: config.json, then the latest checkpoint
// (model, memory), then the run's model.safetensors over the checkpoint's
// model (see loadRunModel). Errors name the file and what is wrong with it.
func LoadRun(dir string) (*Run, error) { return LoadRunAt(dir, -1) }

// LoadRunAt opens the run in dir at the checkpoint kept for step (see
// --keep-checkpoints and KeptSteps); a negative step, or the step of the
// latest checkpoint, opens the latest one.
func LoadRunAt(dir string, step int) (*Run, error) { return LoadRunOn(dir, step, "") }

// LoadRunOn is LoadRunAt with the model placed on device (see
// Options.Device and ResolveDevice) before its checkpoint is loaded: the
// file's tensors are copied in from the host, whatever device the run was
// trained on. A backend that cannot run the model is refused with the
// capabilities it lacks.
func LoadRunOn(dir string, step int, device string) (*Run, error) {
	dev, err := ResolveDevice(device)
	if err != nil {
		return nil, err
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	m, err := NewMethod(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	if err := placeMethod(m, dev, cfg.Arch+" ("+cfg.Method+")"); err != nil {
		return nil, err
	}
	ckpt, err := checkpointPath(dir)
	if err != nil {
		return nil, err
	}
	latest := true
	if step >= 0 {
		if st, err := readState(ckpt); err != nil || st.Step != step {
			ckpt = filepath.Join(dir, KeptDir, KeptName(step))
			if _, err := os.Stat(filepath.Join(ckpt, stateFile)); err != nil {
				kept, _ := KeptSteps(dir)
				return nil, fmt.Errorf("run %s: no checkpoint of step %d (kept: %v; the latest is step %d; train with --keep-checkpoints to keep more)", dir, step, kept, st.Step)
			}
			latest = false
		}
	}
	st, err := loadCheckpoint(ckpt, m, nil)
	if err != nil {
		return nil, err
	}
	if latest {
		if err := loadRunModel(dir, m, st.Step); err != nil {
			return nil, err
		}
	}
	r := &Run{Dir: dir, Config: *cfg, Device: dev, Step: st.Step, Method: m, Encoder: m.Encoder(),
		FeatureDim: m.Encoder().FeatureDim(), Memory: m.Memory()}
	for _, p := range m.Parts() {
		nn.Train(p.Module, false)
		if p.Prefix == "projector" {
			r.Projector = p.Module
		}
	}
	return r, nil
}

// loadRunModel loads the run's own model.safetensors into m, over the
// checkpoint's model of step: it is the file the run hands its users, so
// weights edited there (in PyTorch, say) are the ones evaluated, and a
// damaged one is an error, not silently replaced by the checkpoint's. Its
// absence leaves the checkpoint's model, as does a file whose "step"
// metadata names another step than the checkpoint's: a save interrupted
// between the checkpoint and this copy leaves the previous step's here.
func loadRunModel(dir string, m ssl.Method, step int) error {
	path := filepath.Join(dir, ModelFile)
	f, err := safetensors.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w (expected the run's model as duelctl train writes it; delete the file to evaluate the checkpoint's, %s/%s)", err, CheckpointDir, ModelFile)
	}
	if s, ok := f.Metadata["step"]; ok && s != strconv.Itoa(step) {
		return nil
	}
	return loadModel(m, f, path)
}

// Embed returns the features (N, D) of images x (N, C, H, W, normalised as
// the training views were): layer "backbone" gives the pooled features
// before fc, "projector" the projector's output (not normalised). The
// forward passes run without gradient, batch images at a time, on the
// run's device: each batch is copied in and its features copied out.
func (r *Run) Embed(x *tensor.Tensor, layer string, batch int) (*tensor.Tensor, error) {
	if layer != "backbone" && layer != "projector" {
		return nil, fmt.Errorf("layer %q, expected backbone or projector", layer)
	}
	if layer == "projector" && r.Projector == nil {
		return nil, fmt.Errorf("layer projector: method %s has no projector", r.Config.Method)
	}
	if x.NDim() != 4 || x.Dim(1) != 3 {
		return nil, fmt.Errorf("images of shape %v, expected (N, 3, H, W)", x.Shape())
	}
	if batch < 1 {
		return nil, fmt.Errorf("batch %d, expected >= 1", batch)
	}
	x = x.Contiguous()
	n := x.Dim(0)
	per := x.Numel() / max(n, 1)
	src := x.Data()
	var out []float32
	d := 0
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		xd, err := tensor.FromSlice(src[lo*per:hi*per], hi-lo, x.Dim(1), x.Dim(2), x.Dim(3)).To(r.Device)
		if err != nil {
			return nil, fmt.Errorf("copying images %d..%d to %s: %w", lo, hi, r.Device, err)
		}
		f := r.Encoder.Features(nil, autograd.NewVar(xd, false))
		if layer == "projector" {
			f = r.Projector.Forward(nil, f)
		}
		v, err := f.Value.To(tensor.CPU)
		if err != nil {
			return nil, fmt.Errorf("copying the features of images %d..%d to the host: %w", lo, hi, err)
		}
		v = v.Contiguous()
		d = v.Dim(1)
		out = append(out, v.Data()...)
	}
	if n == 0 {
		d = r.FeatureDim
		if layer == "projector" {
			d = r.Config.ProjDim
		}
	}
	return tensor.FromSlice(out, n, d), nil
}

// OpenDataset opens the train (train = true) or test split of the run's
// dataset, with 3 channels as the encoder takes them.
func (r *Run) OpenDataset(train bool) (*data.Dataset, error) {
	ds, err := data.Open(r.Config.Dataset, r.Config.Data, train)
	if err != nil {
		return nil, err
	}
	ds = ds.ToRGB()
	if rec := r.Config.TrainedOn; rec != nil {
		got := &DataRecord{Classes: ds.Classes, Images: rec.Images, Height: rec.Height, Width: rec.Width}
		if train {
			got.Images, got.Height, got.Width = ds.Len(), ds.H, ds.W
		}
		if how := rec.differs(got, false); how != "" {
			return nil, dataChanged(&r.Config, r.Dir, how)
		}
	}
	return ds, nil
}

// Normalization returns the per-channel mean and standard deviation the
// training views were normalised with (3 channels).
func (r *Run) Normalization() (mean, std []float32, err error) {
	if rec := r.Config.TrainedOn; rec != nil && len(rec.Mean) == 3 && len(rec.Std) == 3 {
		return slices.Clone(rec.Mean), slices.Clone(rec.Std), nil
	}
	if mean, std, ok := data.NormStats(r.Config.Dataset); ok {
		if len(mean) == 1 {
			mean = []float32{mean[0], mean[0], mean[0]}
			std = []float32{std[0], std[0], std[0]}
		}
		return mean, std, nil
	}
	ds, err := r.OpenDataset(true)
	if err != nil {
		return nil, nil, err
	}
	mean, std = normStats(&r.Config, ds)
	return mean, std, nil
}

// Metrics reads the run's metrics.jsonl.
func (r *Run) Metrics() ([]Metric, error) { return ReadMetrics(r.Dir) }

// MemoryUsage returns the memory's Usage as the training log records it
// at the run's last step (metrics.jsonl's memory_age_*, memory_stale_*,
// memory_neg_uses_*): the rows record the index of the step they entered
// at (0 for the first step), and a row that entered at the last step done
// (index Step-1) has age 0. It is the zero Usage without a memory.
func (r *Run) MemoryUsage() memory.Usage {
	if r.Memory == nil {
		return memory.Usage{}
	}
	return r.Memory.Usage(r.Step - 1)
}

// ModelPath returns the path of the run's model.safetensors.
func (r *Run) ModelPath() string { return filepath.Join(r.Dir, ModelFile) }
