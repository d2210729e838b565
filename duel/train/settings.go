package train

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/nn/resnet"
)

// SettingKind is the type of a setting's value.
type SettingKind int

// The kinds of settings.
const (
	IntSetting SettingKind = iota
	FloatSetting
	StringSetting
	BoolSetting
	UintSetting
)

// Setting is one Config field that a `duelctl train` flag sets: the flag's
// name (the field's JSON name with dashes), its help text and its kind.
type Setting struct {
	Name  string
	Usage string
	Kind  SettingKind
	// Resumable settings may change when a run is resumed.
	Resumable bool
	field     func(*Config) any // a pointer to the field
}

// Settings lists the settings with a flag, in the order of `duelctl train
// --help`. The method and the preset are chosen apart (Preset).
func Settings() []Setting {
	type C = Config
	i := func(name, usage string, f func(*C) *int) Setting {
		return Setting{Name: name, Usage: usage, Kind: IntSetting, field: func(c *C) any { return f(c) }}
	}
	fl := func(name, usage string, f func(*C) *float64) Setting {
		return Setting{Name: name, Usage: usage, Kind: FloatSetting, field: func(c *C) any { return f(c) }}
	}
	s := func(name, usage string, f func(*C) *string) Setting {
		return Setting{Name: name, Usage: usage, Kind: StringSetting, field: func(c *C) any { return f(c) }}
	}
	b := func(name, usage string, f func(*C) *bool) Setting {
		return Setting{Name: name, Usage: usage, Kind: BoolSetting, field: func(c *C) any { return f(c) }}
	}
	r := func(s Setting) Setting { s.Resumable = true; return s }
	return []Setting{
		s("dataset", "dataset: "+strings.Join(data.Names, ", ")+" (default: default, the CIFAR-10 subset embedded in the binary)", func(c *C) *string { return &c.Dataset }),
		s("data", "dataset directory (default: the cache, ~/.cache/duel/<dataset>); for folder, the image folder: "+data.FolderLayouts, func(c *C) *string { return &c.Data }),
		s("arch", "encoder: "+resnet.ValidNames+", CIFAR stem (default: resnet18-w16; paper-cifar10: resnet50)", func(c *C) *string { return &c.Arch }),
		s("stem", "ResNet stem: cifar (3x3 stride-1 convolution, no max-pool, for 32x32 images) or imagenet (torchvision's 7x7 stride-2 convolution and max-pool) (default: cifar; paper-stl10: imagenet)", func(c *C) *string { return &c.Stem }),
		s("augment", "augmentation recipe: paper, mocov2, simclr or none (default: paper, Appendix E.2)", func(c *C) *string { return &c.Augment }),
		fl("rho-max", "probability of the dominant class (--imbalance dominant) (default: 0.5)", func(c *C) *float64 { return &c.RhoMax }),
		i("dominant-class", "index of the dominant (head) class (default: 0)", func(c *C) *int { return &c.DominantClass }),
		s("imbalance", "class profile of the stream: dominant (the paper's), longtail, longtail-subset or uniform (default: dominant)", func(c *C) *string { return &c.Imbalance }),
		fl("imbalance-ratio", "head/tail frequency ratio for longtail profiles (default: 100)", func(c *C) *float64 { return &c.ImbalanceRatio }),
		r(i("steps", "optimisation steps; 0 writes the initial checkpoint and exits (default: 200; paper-cifar10: 160000)", func(c *C) *int { return &c.Steps })),
		i("batch", "images per step, two views each (default: 64; paper-cifar10: 256)", func(c *C) *int { return &c.Batch }),
		fl("lr", "base learning rate, linear warm-up then cosine decay (default: 0.001; paper-cifar10: 0.05)", func(c *C) *float64 { return &c.LR }),
		s("optimizer", "adam, adamw, sgd or lars (default: adam)", func(c *C) *string { return &c.Optimizer }),
		fl("wd", "weight decay (default: 0)", func(c *C) *float64 { return &c.WD }),
		fl("momentum", "momentum of sgd and lars (default: 0.9)", func(c *C) *float64 { return &c.Momentum }),
		fl("lars-eta", "LARS trust coefficient eta of the layer-wise rate eta·‖w‖/(‖g‖ + wd·‖w‖) (default: 0.001, LARS's and solo-learn's LARS default; solo-learn's CIFAR scripts use 0.02 with --lars-clip)", func(c *C) *float64 { return &c.LARSEta }),
		b("lars-clip", "LARS: cap the layer-wise rate at the global one, min(local/lr, 1) (solo-learn's clip_lr) (default: off)", func(c *C) *bool { return &c.LARSClip }),
		i("warmup-steps", "linear warm-up steps (default: 10; paper-cifar10: 0; cut to a tenth of --steps when not shorter than the run)", func(c *C) *int { return &c.WarmupSteps }),
		fl("min-lr", "learning rate at the end of the cosine decay (default: 0)", func(c *C) *float64 { return &c.MinLR }),
		{Name: "seed", Usage: "seed of every random draw: same seed, same machine -> same run (default: 1)", Kind: UintSetting,
			field: func(c *C) any { return &c.Seed }},
		i("memory-size", "rows K of the memory (MoCo's queue, the DUEL memory) (default: 2048, the paper's)", func(c *C) *int { return &c.MemorySize }),
		s("policy", "memory policy: "+strings.Join(memory.PolicyNames(), ", ")+" (default: fifo for moco, duel for dmoco and dsimclr)", func(c *C) *string { return &c.Policy }),
		s("admission", "DUEL reading of the update order: protected (Appendix D, new rows safe within their batch), compete (Appendix D, MAX_SCORE = 0), insert-first (Algorithm 1 as printed) or max-score (MAX_SCORE a large constant: degenerate, one row replaced per batch) (default: protected)", func(c *C) *string { return &c.Admission }),
		b("safe-update", "Algorithm 2's safe update: keep the memory when an update lowers its distinctiveness (default: off)", func(c *C) *bool { return &c.SafeUpdate }),
		i("max-age", "steps a row may stay in the memory: older rows leave first, whatever the policy; 0 = no limit, the paper's (default: 0)", func(c *C) *int { return &c.MaxAge }),
		i("mem-refresh", "memory rows re-embedded each step from their images by the current (key) encoder, stalest first: keeps the features the policy compares and the negatives current (Algorithm 1 scores with the current encoder); 0 = never, the paper's implementation (default: 0)", func(c *C) *int { return &c.MemRefresh }),
		fl("tau", "temperature of InfoNCE / NT-Xent (default: 0.5, the paper's)", func(c *C) *float64 { return &c.Tau }),
		fl("ema", "momentum of the key (MoCo) and target (BYOL) networks (default: 0.99; the paper's MoCo value, 0.9, in paper-cifar10)", func(c *C) *float64 { return &c.EMA }),
		s("negatives", "contrastive negatives: batch, memory or mixed (Appendix F.3) (default: memory for moco/dmoco, mixed for dsimclr, batch for simclr)", func(c *C) *string { return &c.Negatives }),
		fl("eps", "weight of the positive in the InfoNCE denominator, in [0, 1]: the paper compares 1 (InfoNCE) and 0 (Eq. 17) (default: 1)", func(c *C) *float64 { return &c.Eps }),
		i("mem-negatives", "memory rows used as negatives per step, 0 = all (default: all for moco/dmoco; dsimclr: 64, paper-cifar10: 256)", func(c *C) *int { return &c.MemNegatives }),
		s("mem-view", "how dsimclr re-embeds memory samples: augment (a fresh augmented view) or plain (default: augment)", func(c *C) *string { return &c.MemView }),
		s("memory-from", "what enters the memory: step (this step's keys / target projections) or target (the target view re-encoded after the update, Algorithms 1 and 3) (default: step; paper presets: target)", func(c *C) *string { return &c.MemoryFrom }),
		i("proj-dim", "projector output size (default: 256; barlow: 512; paper-stl10: 512)", func(c *C) *int { return &c.ProjDim }),
		i("proj-hidden", "projector hidden width, 0 = one Linear layer as in the paper (default: 0; byol, barlow: 512; paper-cifar10: 0, byol 2048; paper-stl10: 512, byol 4096)", func(c *C) *int { return &c.ProjHidden }),
		i("pred-hidden", "hidden width of the predictor (methods with one: byol) (default: 512)", func(c *C) *int { return &c.PredHidden }),
		b("head-bn", "BatchNorm in the hidden layers of the heads of a method with a predictor (byol) (default: on; paper-cifar10: off)", func(c *C) *bool { return &c.HeadBN }),
		i("bn-splits", "ghost BatchNorm groups in the encoders over the global batch (MoCo's single-machine shuffle BN; with R ranks 1 or a multiple of R) (default: 4 for moco/dmoco, 1 otherwise)", func(c *C) *int { return &c.BNSplits }),
		b("sync-bn", "with several data-parallel ranks: BatchNorm statistics of the whole global batch (PyTorch's SyncBatchNorm; needs --bn-splits 1); without it each rank normalises its shard (default: off)", func(c *C) *bool { return &c.SyncBN }),
		b("shuffle-bn", "shuffle MoCo's key batch across the BatchNorm groups (default: on for moco/dmoco)", func(c *C) *bool { return &c.ShuffleBN }),
		fl("barlow-lambda", "Barlow Twins off-diagonal weight (default: 0.005)", func(c *C) *float64 { return &c.BarlowLambda }),
		r(i("checkpoint-every", "save the resumable state every N steps (and at the end); 0 = only at the end (default: 100)", func(c *C) *int { return &c.CheckpointEvery })),
		r(b("keep-checkpoints", "keep every checkpoint (model, memory) in checkpoints/step-N for evaluation over training (eval/analyze --step N), and the model before training as step 0 (to compare the trained encoders with the initial one) when the run starts, or resumes from step 0, with it; turned on at a later --resume, it keeps the checkpoints written from then on (default: off)", func(c *C) *bool { return &c.KeepCheckpoints })),
		r(i("log-every", "write a metrics.jsonl line every N steps (default: 10)", func(c *C) *int { return &c.LogEvery })),
		r(i("knn-every", "kNN top-1 monitor every N steps and at the end; 0 = never (default: 100)", func(c *C) *int { return &c.KNNEvery })),
		r(i("knn-train", "train images in the kNN monitor's bank (default: 2000)", func(c *C) *int { return &c.KNNTrain })),
		r(i("knn-test", "test images the kNN monitor classifies (default: 1000)", func(c *C) *int { return &c.KNNTest })),
		r(i("knn-k", "neighbours of the kNN monitor (default: 20); each metrics.jsonl line with a knn_top1 records the --knn-* settings it was measured with (\"knn\": k, temperature 0.07, train and test images), which --resume may change", func(c *C) *int { return &c.KNNK })),
		r(i("workers", "augmentation goroutines, 0 = one per core (default: 0)", func(c *C) *int { return &c.Workers })),
	}
}

// LookupSetting returns the setting of the flag name (without dashes).
func LookupSetting(name string) (Setting, bool) {
	for _, s := range Settings() {
		if s.Name == name {
			return s, true
		}
	}
	return Setting{}, false
}

// SettingNames lists the settings' flag names in alphabetical order.
func SettingNames() []string {
	var names []string
	for _, s := range Settings() {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// SetFlag sets the field of cfg that the `duelctl train` flag name sets
// (without dashes, e.g. "rho-max") from its text value, as the flag would.
// A value that does not parse gives a *ConfigError ("--name: got "X",
// expected an integer"); the range of a value is checked by Validate. An
// unknown name is an error listing the known ones.
func SetFlag(cfg *Config, name, value string) error {
	s, ok := LookupSetting(name)
	if !ok {
		return fmt.Errorf("unknown training flag --%s (expected one of %s)", name, strings.Join(SettingNames(), ", "))
	}
	return s.Set(cfg, value)
}

// Value returns the setting's value in cfg as its flag's text (what Set
// parses back into the same value).
func (s Setting) Value(cfg *Config) string {
	switch p := s.field(cfg).(type) {
	case *int:
		return strconv.Itoa(*p)
	case *float64:
		return strconv.FormatFloat(*p, 'g', -1, 64)
	case *uint64:
		return strconv.FormatUint(*p, 10)
	case *bool:
		return strconv.FormatBool(*p)
	case *string:
		return *p
	default:
		return fmt.Sprint(p)
	}
}

// Set parses value into the setting's field of cfg.
func (s Setting) Set(cfg *Config, value string) error {
	got := strconv.Quote(value)
	switch p := s.field(cfg).(type) {
	case *int:
		v, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return bad(s.Name, got, "an integer")
		}
		*p = v
	case *float64:
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return bad(s.Name, got, "a number")
		}
		*p = v
	case *uint64:
		v, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return bad(s.Name, got, "a non-negative integer below 2^64")
		}
		*p = v
	case *bool:
		v, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return bad(s.Name, got, "true or false")
		}
		*p = v
	case *string:
		*p = value
	default:
		return fmt.Errorf("setting --%s: field of type %T", s.Name, p)
	}
	return nil
}
