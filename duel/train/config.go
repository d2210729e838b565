package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/data/augment"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/internal/atomicfile"
	"github.com/duel-ssl/duel/nn/resnet"
)

// Config is every setting of a training run. config.json holds it with
// these JSON names; the command-line flag of a field is its JSON name with
// dashes (rho_max: --rho-max).
type Config struct {
	Preset string `json:"preset"` // the preset the defaults came from
	Method string `json:"method"` // ssl method name

	Dataset string `json:"dataset"` // data.Names
	Data    string `json:"data"`    // dataset directory ("" = the cache)
	Arch    string `json:"arch"`    // resnet name, e.g. resnet18-w16
	Stem    string `json:"stem"`    // cifar (3x3 stride 1, no max-pool) or imagenet (7x7 stride 2 + max-pool); "" = cifar
	Augment string `json:"augment"` // augment.PresetNames

	Imbalance      string  `json:"imbalance"`       // dominant, longtail, longtail-subset or uniform
	RhoMax         float64 `json:"rho_max"`         // dominant class probability (dominant)
	DominantClass  int     `json:"dominant_class"`  // the most frequent class
	ImbalanceRatio float64 `json:"imbalance_ratio"` // head/tail ratio (longtail)

	Steps       int     `json:"steps"`
	Batch       int     `json:"batch"`
	Optimizer   string  `json:"optimizer"` // adam, sgd or lars
	LR          float64 `json:"lr"`
	WD          float64 `json:"wd"`
	Momentum    float64 `json:"momentum"` // SGD and LARS momentum
	WarmupSteps int     `json:"warmup_steps"`
	MinLR       float64 `json:"min_lr"` // end of the cosine schedule
	Seed        uint64  `json:"seed"`

	MemorySize   int     `json:"memory_size"`
	Policy       string  `json:"policy"`
	Admission    string  `json:"admission"`
	SafeUpdate   bool    `json:"safe_update"`
	MaxAge       int     `json:"max_age"`     // steps a memory row may stay; 0 = no limit
	MemRefresh   int     `json:"mem_refresh"` // memory rows re-embedded per step; 0 = never
	Tau          float64 `json:"tau"`
	EMA          float64 `json:"ema"`
	Negatives    string  `json:"negatives"`
	Eps          float64 `json:"eps"`
	MemNegatives int     `json:"mem_negatives"`
	MemView      string  `json:"mem_view"`    // augment or plain: how D-SimCLR re-embeds memory samples
	MemoryFrom   string  `json:"memory_from"` // step or target
	ProjDim      int     `json:"proj_dim"`
	ProjHidden   int     `json:"proj_hidden"`
	PredHidden   int     `json:"pred_hidden"`
	HeadBN       bool    `json:"head_bn"`
	BNSplits     int     `json:"bn_splits"`
	ShuffleBN    bool    `json:"shuffle_bn"`
	SyncBN       bool    `json:"sync_bn,omitempty"` // data-parallel: BatchNorm over the global batch
	BarlowLambda float64 `json:"barlow_lambda"`

	CheckpointEvery int  `json:"checkpoint_every"`
	KeepCheckpoints bool `json:"keep_checkpoints"` // keep every checkpoint in checkpoints/step-N
	LogEvery        int  `json:"log_every"`
	KNNEvery        int  `json:"knn_every"`
	KNNTrain        int  `json:"knn_train"` // train images of the kNN monitor's bank
	KNNTest         int  `json:"knn_test"`  // test images it classifies
	KNNK            int  `json:"knn_k"`
	Workers         int  `json:"workers"` // augmentation goroutines; 0 = GOMAXPROCS
}

// PresetNames lists the training presets.
var PresetNames = []string{"cpu-small", "paper-cifar10", "paper-stl10", "tiny"}

// StemNames lists the accepted --stem values.
var StemNames = []string{"cifar", "imagenet"}

// DefaultPreset is the preset of a run that names none.
const DefaultPreset = "cpu-small"

// DefaultMethod is the method of a run that names none.
const DefaultMethod = "dmoco"

// Preset returns the full configuration of a preset for a method:
//
//	cpu-small      the default: a run of a few minutes on two cores on the
//	               embedded CIFAR-10 subset (ResNet-18 at width 16, batch 64,
//	               Adam 1e-3 with warm-up and cosine decay, memory 2048,
//	               paper augmentations, rho_max 0.5).
//	paper-cifar10  the paper's CIFAR-10 setting (Appendix E.2): ResNet-50,
//	               batch 256, 160k steps, Adam 0.05 with cosine decay, τ 0.5,
//	               momentum 0.9, memory 2048, a single Linear projection to
//	               256, 256 memory negatives for D-SimCLR, BYOL hidden 2048.
//	paper-stl10    the paper's STL-10 setting (Appendix E.2): as paper-cifar10
//	               on STL-10's 96x96 images with torchvision's ImageNet stem,
//	               40k steps, a 2-layer projector (512, ReLU, 512), BYOL heads
//	               of width 4096 with BatchNorm.
//	tiny           for tests and smoke runs: ResNet-18 at width 4, batch 16.
//
// Method-dependent settings (negatives, policy, memory negatives, ghost BN)
// come from the method's registration.
func Preset(name, method string) (Config, error) {
	info, ok := ssl.Lookup(method)
	if !ok {
		return Config{}, &ConfigError{"method", fmt.Sprintf("%q", method), strings.Join(ssl.Names(), ", ")}
	}
	c := Config{
		Preset: name, Method: method,
		Dataset: "default", Augment: "paper", Stem: "cifar",
		Imbalance: "dominant", RhoMax: 0.5, DominantClass: 0, ImbalanceRatio: 100,
		Optimizer: "adam", Momentum: 0.9, Seed: 1,
		MemorySize: 2048, Policy: info.Policy, Admission: "protected",
		Tau: 0.5, Eps: 1, EMA: 0.99, Negatives: info.Negatives, MemNegatives: info.MemNegatives,
		MemView: "augment", MemoryFrom: "step",
		ProjDim: 256, BarlowLambda: 5e-3, BNSplits: 1,
		KNNTrain: 2000, KNNTest: 1000, KNNK: 20,
	}
	if c.Negatives == "" {
		c.Negatives = ssl.NegBatch
	}
	if c.Policy == "" {
		c.Policy = "duel" // memory kept for metrics only by methods without one
	}
	moco := method == "moco" || method == "dmoco"
	switch name {
	case "cpu-small":
		c.Arch, c.Batch, c.Steps = "resnet18-w16", 64, 200
		c.LR, c.WarmupSteps = 1e-3, 10
		c.CheckpointEvery, c.LogEvery, c.KNNEvery = 100, 10, 100
		if moco {
			c.BNSplits, c.ShuffleBN = 4, true
		}
		if method == "dsimclr" {
			c.MemNegatives = 64
		}
		c.setHeads(512)
	case "paper-cifar10":
		c.Dataset = "cifar10"
		c.Arch, c.Batch, c.Steps = "resnet50", 256, 160000
		c.LR = 0.05
		c.EMA = 0.9
		c.CheckpointEvery, c.LogEvery, c.KNNEvery = 5000, 100, 10000
		c.KNNTrain, c.KNNTest = 10000, 10000
		if moco {
			c.BNSplits, c.ShuffleBN = 8, true
		}
		c.setHeads(2048)
		if method == "byol" {
			c.HeadBN = false // Appendix E.2: BatchNorm in BYOL's heads only on STL-10
		}
	case "paper-stl10":
		c.Dataset, c.Stem = "stl10", "imagenet"
		c.Arch, c.Batch, c.Steps = "resnet50", 256, 40000
		c.LR = 0.05
		c.EMA = 0.9
		c.CheckpointEvery, c.LogEvery, c.KNNEvery = 2000, 100, 5000
		c.KNNTrain, c.KNNTest = 5000, 8000
		if moco {
			c.BNSplits, c.ShuffleBN = 8, true
		}
		switch method {
		case "byol":
			c.ProjHidden, c.PredHidden, c.HeadBN = 4096, 4096, true
		case "barlow":
			c.setHeads(2048)
		default:
			c.ProjHidden, c.ProjDim = 512, 512 // Appendix E.2: 2-layer projector with ReLU into 512 dimensions
		}
	case "tiny":
		c.Arch, c.Batch, c.Steps = "resnet18-w4", 16, 4
		c.LR, c.WarmupSteps = 1e-3, 1
		c.MemorySize, c.ProjDim = 64, 32
		c.CheckpointEvery, c.LogEvery, c.KNNEvery = 2, 1, 0
		c.KNNTrain, c.KNNTest, c.KNNK = 64, 32, 5
		if moco {
			c.BNSplits, c.ShuffleBN = 2, true
		}
		if method == "dsimclr" {
			c.MemNegatives = 16
		}
		c.setHeads(32)
	default:
		return Config{}, &ConfigError{"preset", fmt.Sprintf("%q", name), strings.Join(PresetNames, ", ")}
	}
	return c, nil
}

// setHeads sets the head widths of the non-contrastive methods.
func (c *Config) setHeads(hidden int) {
	switch c.Method {
	case "byol":
		c.ProjHidden, c.PredHidden, c.HeadBN = hidden, hidden, true
	case "barlow":
		c.ProjHidden, c.ProjDim = hidden, hidden
	}
}

// ConfigError is a setting out of range: the flag, what was found and what
// was expected.
type ConfigError struct {
	Flag     string
	Got      any
	Expected string
}

// Error formats the error as "--flag: got X, expected Y".
func (e *ConfigError) Error() string {
	return fmt.Sprintf("--%s: got %v, expected %s", e.Flag, e.Got, e.Expected)
}

func bad(flag string, got any, expected string) error {
	return &ConfigError{flag, got, expected}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Validate checks every setting; the error names the flag.
func (c *Config) Validate() error {
	info, ok := ssl.Lookup(c.Method)
	if !ok {
		return bad("method", fmt.Sprintf("%q", c.Method), strings.Join(ssl.Names(), ", "))
	}
	if !slices.Contains(data.Names, c.Dataset) {
		return bad("dataset", fmt.Sprintf("%q", c.Dataset), strings.Join(data.Names, ", "))
	}
	if _, _, err := resnet.ParseName(c.Arch); err != nil {
		return bad("arch", fmt.Sprintf("%q", c.Arch), resnet.ValidNames)
	}
	if c.Stem != "" && !slices.Contains(StemNames, c.Stem) {
		return bad("stem", fmt.Sprintf("%q", c.Stem), strings.Join(StemNames, " or "))
	}
	if !slices.Contains(augment.PresetNames, c.Augment) {
		return bad("augment", fmt.Sprintf("%q", c.Augment), strings.Join(augment.PresetNames, ", "))
	}
	profiles := []string{string(data.Dominant), string(data.LongTail), string(data.LongTailSubset), string(data.Uniform)}
	switch {
	case !slices.Contains(profiles, c.Imbalance):
		return bad("imbalance", fmt.Sprintf("%q", c.Imbalance), strings.Join(profiles, ", "))
	case !(c.RhoMax >= 0 && c.RhoMax <= 1):
		return bad("rho-max", c.RhoMax, "a probability in [0, 1]")
	case c.DominantClass < 0:
		return bad("dominant-class", c.DominantClass, "a class index >= 0")
	case !(c.ImbalanceRatio >= 1) || !finite(c.ImbalanceRatio):
		return bad("imbalance-ratio", c.ImbalanceRatio, "a number >= 1")
	case c.Steps < 0:
		return bad("steps", c.Steps, "an integer >= 0")
	case c.Batch < 2:
		return bad("batch", c.Batch, "an integer >= 2 (BatchNorm and contrastive negatives need two samples)")
	case !slices.Contains([]string{"adam", "adamw", "sgd", "lars"}, c.Optimizer):
		return bad("optimizer", fmt.Sprintf("%q", c.Optimizer), "adam, adamw, sgd or lars")
	case !(c.LR > 0) || !finite(c.LR):
		return bad("lr", c.LR, "a positive number")
	case !(c.WD >= 0) || !finite(c.WD):
		return bad("wd", c.WD, "a number >= 0")
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return bad("momentum", c.Momentum, "a number in [0, 1)")
	case c.WarmupSteps < 0:
		return bad("warmup-steps", c.WarmupSteps, "an integer >= 0")
	case !(c.MinLR >= 0 && c.MinLR <= c.LR):
		return bad("min-lr", c.MinLR, fmt.Sprintf("a number in [0, --lr %v]", c.LR))
	case c.MemorySize < 1:
		return bad("memory-size", c.MemorySize, "an integer >= 1")
	case !slices.Contains(memory.PolicyNames(), c.Policy):
		return bad("policy", fmt.Sprintf("%q", c.Policy), strings.Join(memory.PolicyNames(), ", "))
	case c.MaxAge < 0:
		return bad("max-age", c.MaxAge, "an integer >= 0 (0 = no limit)")
	case c.MemRefresh < 0:
		return bad("mem-refresh", c.MemRefresh, "an integer >= 0 (0 = never)")
	case !slices.Contains(memory.AdmissionNames, c.Admission):
		return bad("admission", fmt.Sprintf("%q", c.Admission), strings.Join(memory.AdmissionNames, ", "))
	case !(c.Tau > 0) || !finite(c.Tau):
		return bad("tau", c.Tau, "a positive temperature")
	case !(c.EMA >= 0 && c.EMA < 1):
		return bad("ema", c.EMA, "a momentum in [0, 1)")
	case !slices.Contains(ssl.NegativesNames, c.Negatives):
		return bad("negatives", fmt.Sprintf("%q", c.Negatives), strings.Join(ssl.NegativesNames, ", "))
	case c.Negatives != ssl.NegBatch && !info.Memory:
		return bad("negatives", fmt.Sprintf("%q", c.Negatives), fmt.Sprintf("batch (%s has no memory)", c.Method))
	case !(c.Eps >= 0 && c.Eps <= 1):
		return bad("eps", c.Eps, "a number in [0, 1] (0 or 1 in the paper)")
	case c.MemNegatives < 0:
		return bad("mem-negatives", c.MemNegatives, "an integer >= 0 (0 = every memory row)")
	case c.MemView != "augment" && c.MemView != "plain":
		return bad("mem-view", fmt.Sprintf("%q", c.MemView), "augment or plain")
	case c.MemoryFrom != "step" && c.MemoryFrom != "target":
		return bad("memory-from", fmt.Sprintf("%q", c.MemoryFrom), "step or target")
	case c.ProjDim < 1:
		return bad("proj-dim", c.ProjDim, "an integer >= 1")
	case c.ProjHidden < 0:
		return bad("proj-hidden", c.ProjHidden, "an integer >= 0 (0 = a single Linear layer)")
	case c.PredHidden < 0:
		return bad("pred-hidden", c.PredHidden, "an integer >= 0")
	case c.BNSplits < 1:
		return bad("bn-splits", c.BNSplits, "an integer >= 1")
	case c.Batch%c.BNSplits != 0 || c.Batch/c.BNSplits < 2:
		return bad("bn-splits", c.BNSplits, fmt.Sprintf("a divisor of --batch %d leaving groups of at least 2", c.Batch))
	case c.SyncBN && c.BNSplits != 1:
		return bad("bn-splits", c.BNSplits, "1 with --sync-bn (a synchronised BatchNorm normalises the whole global batch)")
	case !(c.BarlowLambda >= 0) || !finite(c.BarlowLambda):
		return bad("barlow-lambda", c.BarlowLambda, "a number >= 0")
	case c.CheckpointEvery < 0:
		return bad("checkpoint-every", c.CheckpointEvery, "an integer >= 0 (0 = only at the end)")
	case c.LogEvery < 1:
		return bad("log-every", c.LogEvery, "an integer >= 1")
	case c.KNNEvery < 0:
		return bad("knn-every", c.KNNEvery, "an integer >= 0 (0 = never)")
	case c.KNNTrain < 1:
		return bad("knn-train", c.KNNTrain, "an integer >= 1")
	case c.KNNTest < 1:
		return bad("knn-test", c.KNNTest, "an integer >= 1")
	case c.KNNK < 1:
		return bad("knn-k", c.KNNK, "an integer >= 1")
	case c.Workers < 0:
		return bad("workers", c.Workers, "an integer >= 0 (0 = one per core)")
	}
	return nil
}

// WriteConfig stores c as dir/config.json, atomically.
func WriteConfig(dir string, c *Config) error {
	return atomicfile.WriteJSON(filepath.Join(dir, "config.json"), c)
}

// ReadConfig reads dir/config.json. Unknown fields are an error, so a typo
// in a hand-edited file does not go unnoticed.
func ReadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}
