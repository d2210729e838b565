// Package ssl holds the self-supervised learning methods duelctl trains:
// MoCo v2, D-MoCo, SimCLR, D-SimCLR, BYOL and Barlow Twins, each in its own
// file behind the Method interface and registered by name.
//
// A method owns its modules (the encoder being trained, heads, momentum
// copies, an active memory) and computes one training step in two halves,
// following the paper's Algorithm 3 (Appendix C):
//
//	loss := m.Loss(tp, batch)   // sample negatives from the memory, forward, loss
//	tp.Backward(loss); opt.Step()
//	m.Update(batch)             // momentum update, then memory update
//
// A step computes on the model's device, the device of the encoder's
// parameters (the CPU unless the caller moved the model): Loss copies the
// batch's host views in, and every projection, key, loss and gradient, the
// memory negatives and the momentum (EMA) update stay there. The active
// memory and its policy run on the host: the features it takes (MoCo's
// keys, D-SimCLR's target projections, refreshed rows) are copied out with
// one explicit host copy each (toHost), and the rows drawn as negatives
// are copied back in. On the CPU neither copy moves data the methods did
// not copy before.
//
// The training loop, the optimizer and checkpoints live in package train.
// docs/ssl-method.md explains how to add a method.
package ssl

import (
	"fmt"
	"slices"
	"sort"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
)

// Encoder is the backbone being trained: a module whose Features are the
// globally pooled representation (N, FeatureDim) of images (N, C, H, W).
// *resnet.ResNet is one; tests inject small ones.
type Encoder interface {
	nn.Module
	Features(tp *autograd.Tape, x *autograd.Var) *autograd.Var
	FeatureDim() int
}

// Batch is the input of one training step: two augmented views of N images,
// the images' sample ids (indices in the dataset) and labels (-1 when
// unknown; used for memory metrics only, never by a loss or a policy).
type Batch struct {
	Step   int
	Views  [2]*tensor.Tensor // each N x C x H x W
	IDs    []int64
	Labels []int32
}

// Part is one named module of a method. The encoder has the empty prefix,
// so its state dict names are torchvision's; every other part's names are
// prefixed with Prefix and a dot ("projector.0.weight").
type Part struct {
	Prefix string
	Module nn.Module
}

// Method is a self-supervised learning method.
type Method interface {
	// Name is the registered name ("dmoco").
	Name() string
	// Encoder returns the backbone being trained.
	Encoder() Encoder
	// Parts lists every module whose tensors make up the model, the encoder
	// first, in a fixed order.
	Parts() []Part
	// Parameters returns the parameters the optimizer trains (momentum
	// copies are not among them).
	Parameters() []*autograd.Var
	// Loss computes the step's loss on tp (forward passes of both views and
	// of any negatives), as a 0-d variable.
	Loss(tp *autograd.Tape, b *Batch) (*autograd.Var, error)
	// Update runs after the optimizer step: momentum update of the target
	// networks, then the memory update.
	Update(b *Batch) error
	// Memory returns the active memory, or nil when the method has none.
	Memory() *memory.Memory
}

// ImageSource fetches images by sample id, for methods that re-embed the
// samples held in their memory (D-SimCLR).
type ImageSource interface {
	// Fetch writes one view of each sample ids[i] into dst (len(ids) x C x H
	// x W, the training view shape). step and slot name the draw so that it
	// is reproducible.
	Fetch(dst []float32, ids []int64, step int) error
}

// Negatives says where contrastive negatives come from (paper Appendix F.3).
const (
	NegBatch  = "batch"  // the other samples of the batch
	NegMemory = "memory" // rows of the active memory only
	NegMixed  = "mixed"  // both
)

// NegativesNames lists the accepted Negatives values.
var NegativesNames = []string{NegBatch, NegMemory, NegMixed}

// Config holds every hyper-parameter of the methods; each method reads the
// fields it needs. Validate checks the ranges.
type Config struct {
	// NewEncoder builds a freshly initialised backbone; it is called once per
	// copy (MoCo's key encoder, BYOL's target) and every call must return the
	// same architecture.
	NewEncoder func() (Encoder, error)

	ProjDim    int  // projector output dimension
	ProjHidden int  // projector hidden width; 0 = a single Linear layer (the paper's CIFAR-10 head)
	HeadBN     bool // BatchNorm1d in the hidden layers of the heads of a method with a predictor (BYOL's)
	PredHidden int  // predictor hidden width (a method with a predictor: BYOL)

	Tau          float64 // InfoNCE / NT-Xent temperature
	Eps          float64 // ε of the paper's InfoNCE (Eq. 17): 1 standard, 0 positive out of the denominator
	EMA          float64 // momentum of the key/target networks (MoCo, D-MoCo, BYOL)
	BarlowLambda float64 // Barlow Twins off-diagonal weight

	Negatives    string // batch, memory or mixed (contrastive methods)
	MemorySize   int    // K, rows of the memory
	Policy       string // memory policy: one of memory.PolicyNames
	Admission    string // DUEL reading: memory.AdmissionNames
	SafeUpdate   bool   // Algorithm 2's safe update
	MaxAge       int    // steps a memory row may stay (memory.WithMaxAge); 0 = no limit
	MemRefresh   int    // memory rows re-embedded by the current (key) encoder per step, stalest first; 0 = never (the paper's implementation)
	MemNegatives int    // memory rows used as negatives per step; 0 = all
	MemoryFrom   string // "step" (the step's keys / target projections enter the memory) or "target" (Algorithms 1 and 3: the target view re-encoded after the update)
	ShuffleBN    bool   // MoCo: shuffle the key batch across BatchNorm groups
	BNSplits     int    // ghost BatchNorm groups of the encoders over the global batch (1 = ordinary BN)

	Seed   uint64      // seeds the heads' initialisation and every random draw
	Images ImageSource // D-SimCLR: images of the memory's sample ids

	// DUELPolicy, when set, builds the memory's DUEL policy (Policy
	// "duel") for an admission in place of memory.NewDUEL: training on
	// CUDA sets it to the GPU's (cudaduel), which makes the same
	// decisions. It returns nil for an admission it does not run, which
	// memory.NewDUEL then runs on the host.
	DUELPolicy func(adm memory.Admission) memory.Policy

	// Comm is the process group of data-parallel training (nil: one
	// process). See dist.go for what each rank computes.
	Comm dist.Comm
	// SyncBN makes every BatchNorm of every part a synchronised one when
	// Comm has several ranks: the statistics of the whole global batch,
	// as one process computes them (PyTorch's SyncBatchNorm). Without it
	// each rank normalises its own shard.
	SyncBN bool
}

// Info describes a registered method.
type Info struct {
	// Memory says whether the method keeps an active memory.
	Memory bool
	// Momentum says whether it has momentum (EMA) copies.
	Momentum bool
	// Contrastive says whether --negatives, --eps and --tau apply.
	Contrastive bool
	// Predictor says whether the method has a predictor head, built from
	// Config.PredHidden and Config.HeadBN (--pred-hidden and --head-bn
	// apply; the presets give it a hidden projector layer too).
	Predictor bool
	// Negatives, Policy and MemNegatives are the method's defaults.
	Negatives    string
	Policy       string
	MemNegatives int
	// Summary is a one-line description.
	Summary string
}

// Factory builds a method from a configuration.
type Factory func(cfg Config) (Method, error)

type entry struct {
	info Info
	new  Factory
}

// registry maps names to methods; it is filled by init functions only.
var registry = map[string]entry{}

// Register adds a method under name. It panics on a duplicate name, which is
// a programming error caught by any test.
func Register(name string, info Info, f Factory) {
	if _, dup := registry[name]; dup {
		panic("ssl: method " + name + " registered twice")
	}
	registry[name] = entry{info, f}
}

// Names returns the registered method names, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the description of a registered method.
func Lookup(name string) (Info, bool) {
	e, ok := registry[name]
	return e.info, ok
}

// New builds the method called name.
func New(name string, cfg Config) (Method, error) {
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("ssl: unknown method %q, expected one of %v", name, Names())
	}
	if err := cfg.validate(e.info); err != nil {
		return nil, fmt.Errorf("ssl %s: %w", name, err)
	}
	m, err := e.new(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.SyncBN && cfg.Comm != nil && cfg.Comm.Size() > 1 {
		syncBatchNorms(m, cfg.Comm)
	}
	return m, nil
}

// validate checks the fields a method with info uses.
func (c *Config) validate(info Info) error {
	switch {
	case c.NewEncoder == nil:
		return fmt.Errorf("no encoder constructor")
	case c.ProjDim < 1:
		return fmt.Errorf("projection dimension %d, expected >= 1", c.ProjDim)
	case c.ProjHidden < 0:
		return fmt.Errorf("projector hidden width %d, expected >= 0", c.ProjHidden)
	}
	if info.Contrastive {
		if !(c.Tau > 0) {
			return fmt.Errorf("temperature %v, expected > 0", c.Tau)
		}
		if !(c.Eps >= 0 && c.Eps <= 1) {
			return fmt.Errorf("eps %v, expected in [0, 1]", c.Eps)
		}
		if !slices.Contains(NegativesNames, c.Negatives) {
			return fmt.Errorf("negatives %q, expected one of %v", c.Negatives, NegativesNames)
		}
		if c.Negatives != NegBatch && !info.Memory {
			return fmt.Errorf("negatives %q needs a memory; this method has none (use batch)", c.Negatives)
		}
	}
	if info.Momentum && !(c.EMA >= 0 && c.EMA < 1) {
		return fmt.Errorf("ema %v, expected in [0, 1)", c.EMA)
	}
	if info.Memory {
		if c.MemorySize < 1 {
			return fmt.Errorf("memory size %d, expected >= 1", c.MemorySize)
		}
		if c.MemNegatives < 0 {
			return fmt.Errorf("memory negatives %d, expected >= 0", c.MemNegatives)
		}
		if c.MaxAge < 0 {
			return fmt.Errorf("maximum memory row age %d, expected >= 0", c.MaxAge)
		}
		if c.MemRefresh < 0 {
			return fmt.Errorf("memory refresh %d, expected >= 0", c.MemRefresh)
		}
		if c.MemRefresh > 0 && c.Images == nil {
			return fmt.Errorf("memory refresh needs an image source to re-embed the memory's samples")
		}
	}
	if c.BNSplits < 0 {
		return fmt.Errorf("BatchNorm splits %d, expected >= 1", c.BNSplits)
	}
	if c.SyncBN && c.BNSplits > 1 {
		return fmt.Errorf("synchronised BatchNorm with %d ghost groups: a synchronised BatchNorm normalises the whole global batch, expected 1 group", c.BNSplits)
	}
	return nil
}

// ImageSourceFunc adapts a function to ImageSource.
type ImageSourceFunc func(dst []float32, ids []int64, step int) error

// Fetch calls f.
func (f ImageSourceFunc) Fetch(dst []float32, ids []int64, step int) error { return f(dst, ids, step) }
