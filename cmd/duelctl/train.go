package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/nn/resnet"
)

// trainSetting is one training flag: how to parse it into the configuration.
// Numeric flags are parsed here (not by the flag library) so that a bad value
// gives the usual "--flag: got X, expected Y".
type trainSetting struct {
	flag  cli.Flag
	apply func(c *cli.Context, cfg *train.Config) error
	// resumable settings may change when a run is resumed.
	resumable bool
}

func (s trainSetting) name() string { return s.flag.Names()[0] }

func intSetting(name, usage string, field func(*train.Config) *int) trainSetting {
	return trainSetting{flag: &cli.StringFlag{Name: name, Usage: usage}, apply: func(c *cli.Context, cfg *train.Config) error {
		v, err := strconv.Atoi(strings.TrimSpace(c.String(name)))
		if err != nil {
			return flagError(name, strconv.Quote(c.String(name)), "an integer")
		}
		*field(cfg) = v
		return nil
	}}
}

func floatSetting(name, usage string, field func(*train.Config) *float64) trainSetting {
	return trainSetting{flag: &cli.StringFlag{Name: name, Usage: usage}, apply: func(c *cli.Context, cfg *train.Config) error {
		v, err := strconv.ParseFloat(strings.TrimSpace(c.String(name)), 64)
		if err != nil {
			return flagError(name, strconv.Quote(c.String(name)), "a number")
		}
		*field(cfg) = v
		return nil
	}}
}

func stringSetting(name, usage string, field func(*train.Config) *string) trainSetting {
	return trainSetting{flag: &cli.StringFlag{Name: name, Usage: usage}, apply: func(c *cli.Context, cfg *train.Config) error {
		*field(cfg) = c.String(name)
		return nil
	}}
}

func boolSetting(name, usage string, field func(*train.Config) *bool) trainSetting {
	return trainSetting{flag: &cli.BoolFlag{Name: name, Usage: usage + "; --" + name + "=false turns it off", DisableDefaultText: true}, apply: func(c *cli.Context, cfg *train.Config) error {
		*field(cfg) = c.Bool(name)
		return nil
	}}
}

func resumable(s trainSetting) trainSetting { s.resumable = true; return s }

// trainSettings lists the flags that set train.Config fields. Their
// defaults come from --preset and --method (the help shows cpu-small's).
func trainSettings() []trainSetting {
	type C = train.Config
	return []trainSetting{
		stringSetting("dataset", "dataset: "+strings.Join(data.Names, ", ")+" (default: default, the CIFAR-10 subset embedded in the binary)", func(c *C) *string { return &c.Dataset }),
		stringSetting("data", "dataset directory (default: the cache, ~/.cache/duel/<dataset>; for folder: the image folder)", func(c *C) *string { return &c.Data }),
		stringSetting("arch", "encoder: "+resnet.ValidNames+", CIFAR stem (default: resnet18-w16; paper-cifar10: resnet50)", func(c *C) *string { return &c.Arch }),
		stringSetting("stem", "ResNet stem: cifar (3x3 stride-1 convolution, no max-pool, for 32x32 images) or imagenet (torchvision's 7x7 stride-2 convolution and max-pool) (default: cifar; paper-stl10: imagenet)", func(c *C) *string { return &c.Stem }),
		stringSetting("augment", "augmentation recipe: paper, mocov2, simclr or none (default: paper, Appendix E.2)", func(c *C) *string { return &c.Augment }),
		floatSetting("rho-max", "probability of the dominant class (--imbalance dominant) (default: 0.5)", func(c *C) *float64 { return &c.RhoMax }),
		intSetting("dominant-class", "index of the dominant (head) class (default: 0)", func(c *C) *int { return &c.DominantClass }),
		stringSetting("imbalance", "class profile of the stream: dominant (the paper's), longtail, longtail-subset or uniform (default: dominant)", func(c *C) *string { return &c.Imbalance }),
		floatSetting("imbalance-ratio", "head/tail frequency ratio for longtail profiles (default: 100)", func(c *C) *float64 { return &c.ImbalanceRatio }),
		resumable(intSetting("steps", "optimisation steps; 0 writes the initial checkpoint and exits (default: 200; paper-cifar10: 160000)", func(c *C) *int { return &c.Steps })),
		intSetting("batch", "images per step, two views each (default: 64; paper-cifar10: 256)", func(c *C) *int { return &c.Batch }),
		floatSetting("lr", "base learning rate, linear warm-up then cosine decay (default: 0.001; paper-cifar10: 0.05)", func(c *C) *float64 { return &c.LR }),
		stringSetting("optimizer", "adam, adamw, sgd or lars (default: adam)", func(c *C) *string { return &c.Optimizer }),
		floatSetting("wd", "weight decay (default: 0)", func(c *C) *float64 { return &c.WD }),
		floatSetting("momentum", "momentum of sgd and lars (default: 0.9)", func(c *C) *float64 { return &c.Momentum }),
		intSetting("warmup-steps", "linear warm-up steps (default: 10; paper-cifar10: 0; cut to a tenth of --steps when longer than the run)", func(c *C) *int { return &c.WarmupSteps }),
		floatSetting("min-lr", "learning rate at the end of the cosine decay (default: 0)", func(c *C) *float64 { return &c.MinLR }),
		trainSetting{flag: &cli.StringFlag{Name: "seed", Usage: "seed of every random draw: same seed, same machine -> same run (default: 1)"},
			apply: func(c *cli.Context, cfg *train.Config) error {
				v, err := strconv.ParseUint(strings.TrimSpace(c.String("seed")), 10, 64)
				if err != nil {
					return flagError("seed", strconv.Quote(c.String("seed")), "a non-negative integer")
				}
				cfg.Seed = v
				return nil
			}},
		intSetting("memory-size", "rows K of the memory (MoCo's queue, the DUEL memory) (default: 2048, the paper's)", func(c *C) *int { return &c.MemorySize }),
		stringSetting("policy", "memory policy: "+strings.Join(memory.PolicyNames(), ", ")+" (default: fifo for moco, duel for dmoco and dsimclr)", func(c *C) *string { return &c.Policy }),
		stringSetting("admission", "DUEL reading of the update order: protected (Appendix D, new rows safe within their batch), compete (Appendix D, MAX_SCORE = 0), insert-first (Algorithm 1 as printed) or max-score (MAX_SCORE a large constant: degenerate, one row replaced per batch) (default: protected)", func(c *C) *string { return &c.Admission }),
		boolSetting("safe-update", "Algorithm 2's safe update: keep the memory when an update lowers its distinctiveness (default: off)", func(c *C) *bool { return &c.SafeUpdate }),
		intSetting("max-age", "steps a row may stay in the memory: older rows leave first, whatever the policy; 0 = no limit, the paper's (default: 0)", func(c *C) *int { return &c.MaxAge }),
		intSetting("mem-refresh", "memory rows re-embedded each step from their images by the current (key) encoder, stalest first: keeps the features the policy compares and the negatives current (Algorithm 1 scores with the current encoder); 0 = never, the paper's implementation (default: 0)", func(c *C) *int { return &c.MemRefresh }),
		floatSetting("tau", "temperature of InfoNCE / NT-Xent (default: 0.5, the paper's)", func(c *C) *float64 { return &c.Tau }),
		floatSetting("ema", "momentum of the key (MoCo) and target (BYOL) networks (default: 0.99; the paper's MoCo value, 0.9, in paper-cifar10)", func(c *C) *float64 { return &c.EMA }),
		stringSetting("negatives", "contrastive negatives: batch, memory or mixed (Appendix F.3) (default: memory for moco/dmoco, mixed for dsimclr, batch for simclr)", func(c *C) *string { return &c.Negatives }),
		floatSetting("eps", "weight of the positive in the InfoNCE denominator, 0 or 1 (Eq. 17) (default: 1)", func(c *C) *float64 { return &c.Eps }),
		intSetting("mem-negatives", "memory rows used as negatives per step, 0 = all (default: all for moco/dmoco; dsimclr: 64, paper-cifar10: 256)", func(c *C) *int { return &c.MemNegatives }),
		stringSetting("mem-view", "how dsimclr re-embeds memory samples: augment (a fresh augmented view) or plain (default: augment)", func(c *C) *string { return &c.MemView }),
		stringSetting("memory-from", "what enters the memory: step (this step's keys / target projections) or target (the target view re-encoded after the update, Algorithm 3) (default: step)", func(c *C) *string { return &c.MemoryFrom }),
		intSetting("proj-dim", "projector output size (default: 256; barlow: 512)", func(c *C) *int { return &c.ProjDim }),
		intSetting("proj-hidden", "projector hidden width, 0 = one Linear layer as in the paper (default: 0; byol, barlow: 512)", func(c *C) *int { return &c.ProjHidden }),
		intSetting("pred-hidden", "BYOL predictor hidden width (default: 512)", func(c *C) *int { return &c.PredHidden }),
		boolSetting("head-bn", "BatchNorm in BYOL's heads (default: on; paper-cifar10: off)", func(c *C) *bool { return &c.HeadBN }),
		intSetting("bn-splits", "ghost BatchNorm groups in MoCo's encoders (single-machine shuffle BN) (default: 4 for moco/dmoco, 1 otherwise)", func(c *C) *int { return &c.BNSplits }),
		boolSetting("shuffle-bn", "shuffle MoCo's key batch across the BatchNorm groups (default: on for moco/dmoco)", func(c *C) *bool { return &c.ShuffleBN }),
		floatSetting("barlow-lambda", "Barlow Twins off-diagonal weight (default: 0.005)", func(c *C) *float64 { return &c.BarlowLambda }),
		resumable(intSetting("checkpoint-every", "save the resumable state every N steps (and at the end); 0 = only at the end (default: 100)", func(c *C) *int { return &c.CheckpointEvery })),
		resumable(boolSetting("keep-checkpoints", "keep every checkpoint (model, memory) in checkpoints/step-N for evaluation over training (eval/analyze --step N) (default: off)", func(c *C) *bool { return &c.KeepCheckpoints })),
		resumable(intSetting("log-every", "write a metrics.jsonl line every N steps (default: 10)", func(c *C) *int { return &c.LogEvery })),
		resumable(intSetting("knn-every", "kNN top-1 monitor every N steps and at the end; 0 = never (default: 100)", func(c *C) *int { return &c.KNNEvery })),
		resumable(intSetting("knn-train", "train images in the kNN monitor's bank (default: 2000)", func(c *C) *int { return &c.KNNTrain })),
		resumable(intSetting("knn-test", "test images the kNN monitor classifies (default: 1000)", func(c *C) *int { return &c.KNNTest })),
		resumable(intSetting("knn-k", "neighbours of the kNN monitor (default: 20)", func(c *C) *int { return &c.KNNK })),
		resumable(intSetting("workers", "augmentation goroutines, 0 = one per core (default: 0)", func(c *C) *int { return &c.Workers })),
	}
}

func trainCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "method", Value: train.DefaultMethod, Usage: "SSL method: " + strings.Join(ssl.Names(), ", ")},
		&cli.StringFlag{Name: "preset", Value: train.DefaultPreset, Usage: "defaults of every setting: cpu-small (a few minutes on 2 cores), paper-cifar10 and paper-stl10 (Appendix E.2), tiny (smoke tests)"},
		&cli.StringFlag{Name: "out", Usage: "run directory (default: runs/<method>-<time>)"},
		&cli.BoolFlag{Name: "resume", Usage: "continue the run in --out from its last checkpoint (settings come from its config.json; only --steps, --*-every, --knn-* and --workers may change)"},
	}
	for _, s := range trainSettings() {
		flags = append(flags, s.flag)
	}
	flags = append(flags, deviceFlag, jsonFlag)
	return &cli.Command{
		Name:  "train",
		Usage: "train an encoder with a self-supervised method on a class-imbalanced stream",
		Description: "Runs --steps steps of --method on batches drawn from --dataset by the class-imbalanced\n" +
			"sampler (--imbalance, --rho-max, ...), two augmented views per image. Writes into --out:\n" +
			"config.json (every setting used), metrics.jsonl (step, loss, lr, img_per_s,\n" +
			"memory_class_entropy, knn_top1), model.safetensors (torchvision names for the encoder) and\n" +
			"checkpoint/ (resumable state). Ctrl-C saves a checkpoint; --resume continues it exactly.\n" +
			"Defaults come from --preset; the default cpu-small runs in a few minutes on 2 cores.\n" +
			"--json prints {\"run\": DIR, \"steps\": N, \"loss\": F, \"img_per_s\": F} last.",
		Flags:  flags,
		Action: runTrain,
	}
}

// trainConfig builds the configuration from the flags: the preset's values,
// overridden by the flags given; with --resume, the run's config.json.
func trainConfig(c *cli.Context) (*train.Config, string, error) {
	out := c.String("out")
	var cfg *train.Config
	if c.Bool("resume") {
		if out == "" {
			return nil, "", flagError("out", `""`, "the directory of the run to resume")
		}
		if _, err := os.Stat(filepath.Join(out, train.ConfigFile)); err != nil {
			return nil, "", flagError("out", strconv.Quote(out), "the directory of a run to resume (it has no "+train.ConfigFile+")")
		}
		var err error
		if cfg, err = train.ReadConfig(out); err != nil {
			return nil, "", fmt.Errorf("--resume: %w", err)
		}
		for _, name := range []string{"method", "preset"} {
			if c.IsSet(name) && c.String(name) != map[string]string{"method": cfg.Method, "preset": cfg.Preset}[name] {
				return nil, "", flagError(name, strconv.Quote(c.String(name)), "nothing with --resume (the run keeps the settings of its config.json)")
			}
		}
	} else {
		method := c.String("method")
		if _, ok := ssl.Lookup(method); !ok {
			return nil, "", flagError("method", strconv.Quote(method), strings.Join(ssl.Names(), ", "))
		}
		preset, err := train.Preset(c.String("preset"), method)
		if err != nil {
			return nil, "", err
		}
		cfg = &preset
		if out == "" {
			out = filepath.Join("runs", method+"-"+time.Now().Format("20060102-150405"))
		}
	}
	for _, s := range trainSettings() {
		if !c.IsSet(s.name()) {
			continue
		}
		if c.Bool("resume") && !s.resumable {
			return nil, "", flagError(s.name(), strconv.Quote(c.String(s.name())), "nothing with --resume (the run keeps the settings of its config.json)")
		}
		if err := s.apply(c, cfg); err != nil {
			return nil, "", err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, "", err
	}
	return cfg, out, nil
}

func runTrain(c *cli.Context) error {
	if err := checkDevice(c); err != nil {
		return err
	}
	cfg, out, err := trainConfig(c)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := c.App.Writer
	what := "training"
	if c.Bool("resume") {
		what = "resuming"
	}
	fmt.Fprintf(w, "%s %s (%s, batch %d, %d steps, %s, seed %d) into %s\n", what, cfg.Method, cfg.Arch, cfg.Batch, cfg.Steps, cfg.Dataset, cfg.Seed, out)
	res, err := train.Train(ctx, cfg, train.Options{Out: out, Resume: c.Bool("resume"), Log: w, Progress: c.App.ErrWriter})
	if err != nil {
		if errors.Is(err, train.ErrInterrupted) {
			fmt.Fprintln(c.App.ErrWriter)
		}
		return err
	}
	fmt.Fprintf(w, "done: %s, %d steps, loss %.4f, %.1f img/s", res.Run, res.Steps, res.Loss, res.ImgPerS)
	if res.KNNTop1 != nil {
		fmt.Fprintf(w, ", kNN top-1 %.2f%%", 100**res.KNNTop1)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "next: duelctl eval --run %s --protocol knn | duelctl analyze --run %s | duelctl embed --run %s --input X.npy --out Y.npy\n", res.Run, res.Run, res.Run)
	return emitJSON(c, res)
}
