package train

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	Momentum    float64 `json:"momentum"`  // SGD and LARS momentum
	LARSEta     float64 `json:"lars_eta"`  // LARS trust coefficient
	LARSClip    bool    `json:"lars_clip"` // LARS: local rate capped at the global one
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
	SyncBN       bool    `json:"sync_bn"` // data-parallel: BatchNorm over the global batch
	BarlowLambda float64 `json:"barlow_lambda"`

	CheckpointEvery int  `json:"checkpoint_every"`
	KeepCheckpoints bool `json:"keep_checkpoints"` // keep every checkpoint in checkpoints/step-N
	LogEvery        int  `json:"log_every"`
	KNNEvery        int  `json:"knn_every"`
	KNNTrain        int  `json:"knn_train"` // train images of the kNN monitor's bank
	KNNTest         int  `json:"knn_test"`  // test images it classifies
	KNNK            int  `json:"knn_k"`
	Workers         int  `json:"workers"` // augmentation goroutines; 0 = GOMAXPROCS

	// Ran records where and how the run's latest segment computed (Train
	// writes it; not a setting: a run resumes on any device and any number
	// of ranks, and configurations that differ only in it are the same
	// run's).
	Ran *Ran `json:"ran,omitempty"`
	// TrainedOn records the training split the run trained on (Train
	// writes it when the run starts; not a setting).
	TrainedOn *DataRecord `json:"trained_on,omitempty"`
}

// Ran is where and how a run computed (Config.Ran).
type Ran struct {
	// Device is the model's device: "cpu", "cuda:0", ...
	Device string `json:"device"`
	// Precision and ConvPrecision are those of its matrix products and
	// convolutions: fp32 or bf16 on the CPU; fp32, tf32 or bf16 on a GPU.
	Precision     string `json:"precision"`
	ConvPrecision string `json:"conv_precision"`
	// WorldSize is the number of data-parallel ranks (1: one process).
	WorldSize int `json:"world_size"`
	// Kernels, written when the segment ends, lists what the backend
	// chose by measuring, one line a choice: on a GPU, on the run's first
	// steps, the products' kernels by shape (cuda's TCAuto) and the DUEL
	// memory's steps kernel and move (cudaduel's SelectAuto and
	// MoveAuto); on the CPU, the tuning it took from the wisdom file
	// (SGEMM's blocking, the convolutions' algorithms), none without one.
	Kernels []string `json:"kernels,omitempty"`
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
//	cpu-small      the default: a run of under a minute on two cores on the
//	               embedded CIFAR-10 subset (ResNet-18 at width 16, batch 64,
//	               Adam 1e-3 with warm-up and cosine decay, memory 2048,
//	               paper augmentations, rho_max 0.5).
//	paper-cifar10  the paper's CIFAR-10 setting (Appendix E.2): ResNet-50,
//	               batch 256, 160k steps, Adam 0.05 with cosine decay, τ 0.5,
//	               momentum 0.9, memory 2048, a single Linear projection to
//	               256 (Barlow Twins too), 256 memory negatives for D-SimCLR,
//	               BYOL hidden 2048; the memory takes the target view
//	               re-encoded after the update (Algorithms 1 and 3).
//	paper-stl10    the paper's STL-10 setting (Appendix E.2): as paper-cifar10
//	               on STL-10's 96x96 images with torchvision's ImageNet stem,
//	               40k steps, a 2-layer projector (512, ReLU, 512) for every
//	               method, BYOL's of width 4096 with BatchNorm.
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
		Optimizer: "adam", Momentum: 0.9, LARSEta: defaultLARSEta, Seed: 1,
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
		// Appendix E.2: one Linear layer into 256 dimensions for all
		// models (Barlow Twins included), but BYOL's two layers of 2048
		// hidden units, without BatchNorm (only on STL-10).
		if method == "byol" {
			c.ProjHidden, c.PredHidden, c.HeadBN = 2048, 2048, false
		}
		c.MemoryFrom = "target" // Algorithms 1 and 3: the target view, re-encoded after the update
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
		// Appendix E.2: a 2-layer projector with ReLU into 512 dimensions
		// for all models (its hidden width unstated: 512); BYOL's hidden
		// layers of 4096 with BatchNorm.
		c.ProjHidden, c.ProjDim = 512, 512
		if method == "byol" {
			c.ProjHidden, c.PredHidden, c.HeadBN = 4096, 4096, true
		}
		c.MemoryFrom = "target" // Algorithms 1 and 3: the target view, re-encoded after the update
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

// setHeads sets the head widths of the non-contrastive methods: a method
// with a predictor (ssl.Info.Predictor, BYOL's) gets a hidden layer of
// width hidden in its projector and predictor, with BatchNorm; Barlow
// Twins a projector of that width throughout.
func (c *Config) setHeads(hidden int) {
	if info, ok := ssl.Lookup(c.Method); ok && info.Predictor {
		c.ProjHidden, c.PredHidden, c.HeadBN = hidden, hidden, true
	}
	if c.Method == "barlow" {
		c.ProjHidden, c.ProjDim = hidden, hidden
	}
}

// bnSplitChoices lists the --bn-splits a batch allows: its divisors that
// leave groups of at least 2 images ("1, 2, 3 or 6"; the first few and the
// largest when there are many).
func bnSplitChoices(batch int) string {
	var ds []string
	for d := 1; d <= batch/2; d++ {
		if batch%d == 0 {
			ds = append(ds, strconv.Itoa(d))
		}
	}
	switch n := len(ds); {
	case n == 0:
		return "none: a batch of 1 cannot be normalised"
	case n == 1:
		return "only 1"
	case n > 6:
		ds = append(ds[:5:5], "...", ds[n-1])
		return strings.Join(ds, ", ")
	}
	return strings.Join(ds[:len(ds)-1], ", ") + " or " + ds[len(ds)-1]
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

// Upper bounds of the size settings. They lie far beyond any run of the
// paper (batch 256, memory 2048, heads of 4096) and of the usual
// self-supervised literature (batches of 65536, memories of 65536 rows,
// heads of 32768), and keep every product of sizes the code forms inside
// an int. Whether a setting fits this machine's memory is checked apart,
// by CheckMemory, in Validate.
const (
	// MaxBatch bounds --batch: images per step (all ranks together).
	MaxBatch = 1 << 20
	// MaxWidth bounds --proj-dim, --proj-hidden and --pred-hidden.
	MaxWidth = 1 << 20
	// MaxMemorySize bounds --memory-size, and --mem-negatives and
	// --mem-refresh (which take at most every memory row anyway).
	MaxMemorySize = 1 << 24
	// MaxWorkers bounds --workers: augmentation goroutines.
	MaxWorkers = 1024
)

// CheckDominantClass refuses a --dominant-class beyond the classes of the
// dataset (named dataset) it draws from (ValidateSampler checks the rest
// without the data).
func CheckDominantClass(dominant int, dataset string, classes int) error {
	if dominant >= classes {
		return bad("dominant-class", dominant, fmt.Sprintf("a class index below %d (%s has %d classes)", classes, dataset, classes))
	}
	return nil
}

// ValidateSampler checks the settings of the class-imbalanced sampler,
// naming the flag: duelctl train's and duelctl memory stream's. Whether
// the dominant class exists is known once the dataset is open.
func ValidateSampler(imbalance string, rhoMax float64, dominantClass int, imbalanceRatio float64) error {
	profiles := []string{string(data.Dominant), string(data.LongTail), string(data.LongTailSubset), string(data.Uniform)}
	switch {
	case !slices.Contains(profiles, imbalance):
		return bad("imbalance", fmt.Sprintf("%q", imbalance), strings.Join(profiles, ", "))
	case !(rhoMax >= 0 && rhoMax <= 1):
		return bad("rho-max", rhoMax, "a probability in [0, 1]")
	case dominantClass < 0:
		return bad("dominant-class", dominantClass, "a class index >= 0")
	case !(imbalanceRatio >= 1) || !finite(imbalanceRatio):
		return bad("imbalance-ratio", imbalanceRatio, "a number >= 1")
	}
	return nil
}

// Validate checks every setting, then that the run fits this machine's
// memory (CheckMemory); the error names the flag.
func (c *Config) Validate() error {
	if err := c.ValidateSettings(); err != nil {
		return err
	}
	return c.CheckMemory()
}

// ValidateSettings checks every setting against its range, whatever the
// machine; the error names the flag. ReadConfig checks a run's
// config.json with it: a run trained on a larger machine can still be
// evaluated on this one.
func (c *Config) ValidateSettings() error {
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
	if err := ValidateSampler(c.Imbalance, c.RhoMax, c.DominantClass, c.ImbalanceRatio); err != nil {
		return err
	}
	switch {
	case c.Steps < 0:
		return bad("steps", c.Steps, "an integer >= 0")
	case c.Batch < 2 || c.Batch > MaxBatch:
		return bad("batch", c.Batch, fmt.Sprintf("an integer >= 2 (BatchNorm and contrastive negatives need two samples), at most %d", MaxBatch))
	case !slices.Contains([]string{"adam", "adamw", "sgd", "lars"}, c.Optimizer):
		return bad("optimizer", fmt.Sprintf("%q", c.Optimizer), "adam, adamw, sgd or lars")
	case !(c.LR > 0) || !finite(c.LR):
		return bad("lr", c.LR, "a positive number")
	case !(c.WD >= 0) || !finite(c.WD):
		return bad("wd", c.WD, "a number >= 0")
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return bad("momentum", c.Momentum, "a number in [0, 1)")
	case !(c.LARSEta > 0) || !finite(c.LARSEta):
		return bad("lars-eta", c.LARSEta, "a positive number")
	case c.WarmupSteps < 0:
		return bad("warmup-steps", c.WarmupSteps, "an integer >= 0")
	case !(c.MinLR >= 0 && c.MinLR <= c.LR):
		return bad("min-lr", c.MinLR, fmt.Sprintf("a number in [0, --lr %v]", c.LR))
	case c.MemorySize < 1 || c.MemorySize > MaxMemorySize:
		return bad("memory-size", c.MemorySize, fmt.Sprintf("an integer >= 1, at most %d", MaxMemorySize))
	case !slices.Contains(memory.PolicyNames(), c.Policy):
		return bad("policy", fmt.Sprintf("%q", c.Policy), strings.Join(memory.PolicyNames(), ", "))
	case c.MaxAge < 0:
		return bad("max-age", c.MaxAge, "an integer >= 0 (0 = no limit)")
	case c.MemRefresh < 0 || c.MemRefresh > MaxMemorySize:
		return bad("mem-refresh", c.MemRefresh, fmt.Sprintf("an integer >= 0 (0 = never), at most %d", MaxMemorySize))
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
	case c.MemNegatives < 0 || c.MemNegatives > MaxMemorySize:
		return bad("mem-negatives", c.MemNegatives, fmt.Sprintf("an integer >= 0 (0 = every memory row), at most %d", MaxMemorySize))
	case c.MemView != "augment" && c.MemView != "plain":
		return bad("mem-view", fmt.Sprintf("%q", c.MemView), "augment or plain")
	case c.MemoryFrom != "step" && c.MemoryFrom != "target":
		return bad("memory-from", fmt.Sprintf("%q", c.MemoryFrom), "step or target")
	case c.ProjDim < 1 || c.ProjDim > MaxWidth:
		return bad("proj-dim", c.ProjDim, fmt.Sprintf("an integer >= 1, at most %d", MaxWidth))
	case c.ProjHidden < 0 || c.ProjHidden > MaxWidth:
		return bad("proj-hidden", c.ProjHidden, fmt.Sprintf("an integer >= 0 (0 = a single Linear layer), at most %d", MaxWidth))
	case c.PredHidden < 0 || c.PredHidden > MaxWidth:
		return bad("pred-hidden", c.PredHidden, fmt.Sprintf("an integer >= 0, at most %d", MaxWidth))
	case c.BNSplits < 1:
		return bad("bn-splits", c.BNSplits, "an integer >= 1")
	case c.Batch%c.BNSplits != 0 || c.Batch/c.BNSplits < 2:
		return bad("bn-splits", c.BNSplits, fmt.Sprintf("a divisor of --batch %d leaving groups of at least 2 (%s: set one with --bn-splits; the value came from the preset or the run's config.json when it was not given)", c.Batch, bnSplitChoices(c.Batch)))
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
	case c.Workers < 0 || c.Workers > MaxWorkers:
		return bad("workers", c.Workers, fmt.Sprintf("an integer >= 0 (0 = one per core), at most %d", MaxWorkers))
	}
	return nil
}

// WriteConfig stores c as dir/config.json, atomically.
func WriteConfig(dir string, c *Config) error {
	return atomicfile.WriteJSON(filepath.Join(dir, "config.json"), c)
}

// ReadConfig reads dir/config.json. Unknown fields are an error, so a typo
// in a hand-edited file does not go unnoticed. The settings are checked
// with ValidateSettings, not against this machine's memory: a run trained
// on a larger machine can still be evaluated on this one (a resumed run is
// checked by Validate before it trains).
func ReadConfig(dir string) (*Config, error) {
	return ReadConfigFile(filepath.Join(dir, "config.json"))
}

// DecodeBase is the Config a config.json is decoded onto: the settings
// added after runs were written hold the value those runs trained with,
// for the files that lack them (--lars-eta came with LARS's options; a run
// written before trained with its 0.001). Every reader of a run's
// config.json starts from it.
func DecodeBase() Config { return Config{LARSEta: defaultLARSEta} }

// ReadConfigFile is ReadConfig on the file path itself (a run's
// config.json, or one written by hand or copied elsewhere).
func ReadConfigFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	c := DecodeBase()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: data after the JSON object, expected one object", path)
	}
	if err := c.ValidateSettings(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}
