package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/memory/cudaduel"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/duel/train"
)

// trainSetting is one training flag: a train.Setting with its command-line
// flag. Every value is parsed by train.SetFlag (not by the flag library), so
// that a bad value gives the usual "--flag: got X, expected Y".
type trainSetting struct {
	train.Setting
	flag cli.Flag
}

func (s trainSetting) name() string { return s.Name }

// value returns the flag's text as given.
func (s trainSetting) value(c *cli.Context) string {
	if s.Kind == train.BoolSetting {
		return strconv.FormatBool(c.Bool(s.Name))
	}
	return c.String(s.Name)
}

// apply sets the flag's field of cfg.
func (s trainSetting) apply(c *cli.Context, cfg *train.Config) error {
	return s.Set(cfg, s.value(c))
}

// trainSettings lists the flags that set train.Config fields (train.Settings).
// Their defaults come from --preset and --method (the help shows cpu-small's).
func trainSettings() []trainSetting {
	var out []trainSetting
	for _, s := range train.Settings() {
		var f cli.Flag = &cli.StringFlag{Name: s.Name, Usage: s.Usage}
		if s.Kind == train.BoolSetting {
			f = &cli.BoolFlag{Name: s.Name, Usage: s.Usage + "; --" + s.Name + "=false turns it off", DisableDefaultText: true}
		}
		out = append(out, trainSetting{Setting: s, flag: f})
	}
	return out
}

func trainCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "method", Value: train.DefaultMethod, Usage: "SSL method: " + strings.Join(ssl.Names(), ", ")},
		&cli.StringFlag{Name: "preset", Value: train.DefaultPreset, Usage: "defaults of every setting: cpu-small (under a minute on 2 cores), paper-cifar10 and paper-stl10 (Appendix E.2), tiny (smoke tests)"},
		&cli.StringFlag{Name: "out", Usage: "run directory (default: runs/<method>-<time>)"},
		&cli.BoolFlag{Name: "resume", Usage: "continue the run in --out from its last checkpoint (settings come from its config.json; only --steps, --*-every, --keep-checkpoints, --knn-* and --workers may change, config.json recording the latest values and metrics.jsonl each knn_top1's kNN settings; the others may be given again with the run's values)"},
		&cli.StringFlag{Name: "config", DefaultText: "none: the settings of --preset and --method", Usage: "start a new run from the settings of another: a run directory or a config.json (its method, preset and every setting, e.g. to train it again with another --seed); the flags given override them"},
	}
	for _, s := range trainSettings() {
		flags = append(flags, s.flag)
	}
	flags = append(flags, modelDeviceFlag, precisionFlag, convPrecisionFlag, distFlag, distCheckFlag, jsonFlag)
	return &cli.Command{
		Name:  "train",
		Usage: "train an encoder with a self-supervised method on a class-imbalanced stream",
		Description: "Runs --steps steps of --method on batches drawn from --dataset by the class-imbalanced\n" +
			"sampler (--imbalance, --rho-max, ...), two augmented views per image. Writes into --out:\n" +
			"config.json (every setting used; ran: where it computed; trained_on: the training split's\n" +
			"classes, size and normalisation, which --resume, eval and analyze check the data against),\n" +
			"metrics.jsonl (step, loss, lr, img_per_s, memory_class_entropy, knn_top1 and knn: the kNN\n" +
			"settings it was measured with, which --resume may change), model.safetensors (torchvision\n" +
			"names for the encoder), checkpoint/ (resumable state), checkpoints/step-N (--keep-checkpoints;\n" +
			"step 0 holds the model before training) and .lock (held while training: a second training\n" +
			"of the run is refused). A model holding NaN or infinite values is not saved: the command\n" +
			"stops and keeps the last checkpoint. A new run refuses an --out holding another run's\n" +
			"model, kept checkpoints or analysis.\n" +
			"Ctrl-C saves a checkpoint; --resume continues it exactly.\n" +
			"Defaults come from --preset; the default cpu-small runs in under a minute on 2 cores.\n" +
			"Under mpirun (or srun) every process is a data-parallel rank: --batch is the global batch,\n" +
			"each rank computes its share, rank 0 writes --out and prints (README, \"On a cluster\").\n" +
			"--json prints {\"run\": DIR, \"steps\": N, \"loss\": F, \"img_per_s\": F, \"trained_steps\": N (steps\n" +
			"this call trained), \"knn_top1\": F (when measured)} last.",
		Flags:  flags,
		Action: runTrain,
	}
}

// trainConfig builds the configuration from the flags: the preset's values,
// overridden by the flags given; with --resume, the run's config.json. On
// ranks data-parallel processes it first checks that the global batch
// shards over them and fits the ghost BatchNorm groups to them
// (rankGhostGroups, whose line it returns as ghost), before the settings
// are validated together.
func trainConfig(c *cli.Context, ranks int) (cfg *train.Config, out, ghost string, err error) {
	out = c.String("out")
	if c.Bool("resume") && c.IsSet("config") {
		return nil, "", "", flagError("config", strconv.Quote(c.String("config")), "nothing with --resume (a resumed run keeps the settings of its own config.json)")
	}
	if c.Bool("resume") {
		if out == "" {
			return nil, "", "", flagError("out", `""`, "the directory of the run to resume")
		}
		if _, err := os.Stat(filepath.Join(out, train.ConfigFile)); err != nil {
			return nil, "", "", flagError("out", strconv.Quote(out), "the directory of a run to resume (it has no "+train.ConfigFile+")")
		}
		if cfg, err = train.ReadConfig(out); err != nil {
			return nil, "", "", fmt.Errorf("--resume: %w", err)
		}
		for _, name := range []string{"method", "preset"} {
			if run := map[string]string{"method": cfg.Method, "preset": cfg.Preset}[name]; c.IsSet(name) && c.String(name) != run {
				return nil, "", "", flagError(name, strconv.Quote(c.String(name)),
					fmt.Sprintf("nothing with --resume, or the run's %q (the run keeps the settings of its config.json)", run))
			}
		}
	} else if c.IsSet("config") {
		if cfg, err = configFlag(c); err != nil {
			return nil, "", "", err
		}
		if out == "" {
			out = filepath.Join("runs", cfg.Method+"-"+time.Now().Format("20060102-150405"))
		}
	} else {
		method := c.String("method")
		if _, ok := ssl.Lookup(method); !ok {
			return nil, "", "", flagError("method", strconv.Quote(method), strings.Join(ssl.Names(), ", "))
		}
		preset, err := train.Preset(c.String("preset"), method)
		if err != nil {
			return nil, "", "", err
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
		if c.Bool("resume") && !s.Resumable {
			if err := sameSetting(s, c, cfg); err != nil {
				return nil, "", "", err
			}
			continue
		}
		if err := s.apply(c, cfg); err != nil {
			return nil, "", "", err
		}
	}
	if err := cfg.CheckBatchShards(ranks); err != nil {
		return nil, "", "", err
	}
	ghost = rankGhostGroups(c, cfg, ranks)
	if err := cfg.ValidateSettings(); err != nil {
		return nil, "", "", err
	}
	// What a rank holds in this machine's memory: on --device cuda, the
	// networks and activations are on the GPU.
	if err := train.CheckMemory(cfg.MemoryNeedsOn(c.String(modelDeviceFlag.Name), ranks)...); err != nil {
		return nil, "", "", err
	}
	if !c.Bool("resume") { // a run's own --data is compared with its config.json above
		if err := checkDataFlag(c, cfg.Dataset, "--dataset default", "name the dataset in the directory with --dataset"); err != nil {
			return nil, "", "", err
		}
		if err := checkOutDir("out", out); err != nil {
			return nil, "", "", err
		}
	}
	return cfg, out, ghost, nil
}

// configFlag reads the settings --config names (a run directory, or a
// config.json itself) for a new run; --method and --preset, which chose
// the settings it holds, are accepted only with its own values.
func configFlag(c *cli.Context) (*train.Config, error) {
	path := c.String("config")
	file := path
	if fi, err := os.Stat(path); err != nil {
		return nil, flagError("config", strconv.Quote(path), fmt.Sprintf("a run directory or its %s (%v)", train.ConfigFile, err))
	} else if fi.IsDir() {
		file = filepath.Join(path, train.ConfigFile)
		if _, err := os.Stat(file); err != nil {
			return nil, flagError("config", strconv.Quote(path), "a run directory or its "+train.ConfigFile+" (the directory has none)")
		}
	}
	cfg, err := train.ReadConfigFile(file)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	for _, name := range []string{"method", "preset"} {
		if own := map[string]string{"method": cfg.Method, "preset": cfg.Preset}[name]; c.IsSet(name) && c.String(name) != own {
			return nil, flagError(name, strconv.Quote(c.String(name)),
				fmt.Sprintf("nothing with --config, or its %q (the settings of %s were chosen for it)", own, file))
		}
	}
	cfg.Ran, cfg.TrainedOn = nil, nil // where and on what the new run computes are recorded when it does
	return cfg, nil
}

// sameSetting accepts a setting that may not change on --resume when
// its flag gives the run's own value (the command that started the run,
// given again with --resume), and refuses any other value, naming the
// run's.
func sameSetting(s trainSetting, c *cli.Context, cfg *train.Config) error {
	given := *cfg
	if err := s.apply(c, &given); err != nil {
		return err
	}
	if reflect.DeepEqual(given, *cfg) {
		return nil
	}
	return flagError(s.name(), strconv.Quote(s.value(c)),
		fmt.Sprintf("nothing with --resume, or the run's %q (the run keeps the settings of its config.json)", s.Value(cfg)))
}

func runTrain(c *cli.Context) error {
	defer train.CollectSooner()()
	comm, err := openGroup(c)
	if err != nil {
		return err
	}
	if err := trainOn(c, comm); err != nil {
		if !errors.Is(err, train.ErrInterrupted) {
			failGroup(comm, err)
		}
		return err
	}
	return comm.Close()
}

// rankGhostGroups fits the preset's ghost BatchNorm groups to a new run's
// ranks when --bn-splits is not given: data-parallel training needs 1 or a
// multiple of the ranks (each rank its share of the groups), and MoCo's
// presets have 4 or 8, so on 3, 6, 8, ... ranks the groups become the
// smallest multiple of the ranks not below the preset's. It returns the
// line that says so ("" when nothing changed).
func rankGhostGroups(c *cli.Context, cfg *train.Config, ranks int) string {
	if ranks <= 1 || c.Bool("resume") || c.IsSet("bn-splits") || cfg.BNSplits <= 1 || cfg.BNSplits%ranks == 0 {
		return ""
	}
	was := cfg.BNSplits
	cfg.BNSplits = ranks * ((was + ranks - 1) / ranks)
	return fmt.Sprintf("ghost BatchNorm groups: %d (the preset's %d is not a multiple of the %d ranks; --bn-splits sets them)", cfg.BNSplits, was, ranks)
}

// envTrainDUEL names the environment variable that keeps train's and
// reproduce's DUEL memory on the host with --device cuda ("off"); "on" or
// unset let the GPU decide.
const envTrainDUEL = "DUEL_CUDADUEL_TRAIN"

// duelPolicyOn returns train.Options.DUELPolicy for a run on dev (a
// computeDevice result): on "cuda" the DUEL memory decides on the GPU
// too (cudaduel: the same decisions as the CPU's, the memory's
// similarities kept there) unless $DUEL_CUDADUEL_TRAIN is "off",
// elsewhere nil (memory.NewDUEL on the host).
func duelPolicyOn(dev string) (func(memory.Admission) memory.Policy, error) {
	if dev != "cuda" {
		return nil, nil
	}
	switch v := os.Getenv(envTrainDUEL); v {
	case "", "on":
	case "off":
		return nil, nil
	default:
		return nil, fmt.Errorf("%s=%q, expected on or off", envTrainDUEL, v)
	}
	gpu, err := cuda.Default()
	if err != nil {
		return nil, fmt.Errorf("--device cuda: %w", err)
	}
	build := cudaduel.PolicyFor(gpu)
	return func(adm memory.Admission) memory.Policy {
		if p, ok := build(adm).(*cudaduel.Policy); ok {
			return hintedPolicy{p}
		}
		return nil
	}, nil
}

// hintedPolicy is the GPU's DUEL whose errors (a memory too large for the
// kernel's keys or the device's memory) say how to keep the memory on
// the host instead.
type hintedPolicy struct{ *cudaduel.Policy }

// Evict runs the GPU's policy; an error names $DUEL_CUDADUEL_TRAIN.
func (p hintedPolicy) Evict(a *memory.Arrival) ([]int, error) {
	ev, err := p.Policy.Evict(a)
	if err != nil {
		return nil, fmt.Errorf("%w (%s=off keeps the DUEL memory on the host)", err, envTrainDUEL)
	}
	return ev, nil
}

// trainOn runs duelctl train as one rank of comm.
func trainOn(c *cli.Context, comm dist.Comm) error {
	dev, err := computeDevice(c)
	if err != nil {
		return err
	}
	cfg, out, ghost, err := trainConfig(c, comm.Size())
	if err != nil {
		return err
	}
	if n := c.Int(distCheckFlag.Name); n < 1 {
		return flagError(distCheckFlag.Name, n, "an integer >= 1")
	}
	if out, err = broadcastString(comm, out); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := rankWriter(comm, c.App.Writer)
	what := "training"
	if c.Bool("resume") {
		what = "resuming"
	}
	ranks := ""
	if comm.Size() > 1 {
		ranks = fmt.Sprintf(" on %d ranks (%d images each)", comm.Size(), cfg.Batch/max(comm.Size(), 1))
	}
	opts := train.Options{Out: out, Resume: c.Bool("resume"), Device: dev, Log: w,
		Comm: comm, AgreeEvery: c.Int(distCheckFlag.Name)}
	products, convs, err := devicePrecisions(dev)
	if err != nil {
		return err
	}
	if dev == "cuda" {
		ranks += " on the GPU"
	}
	ranks += precisionNote(dev, products, convs)
	if opts.DUELPolicy, err = duelPolicyOn(dev); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s %s (%s, batch %d, %d steps, %s, seed %d)%s into %s\n", what, cfg.Method, cfg.Arch, cfg.Batch, cfg.Steps, cfg.Dataset, cfg.Seed, ranks, out)
	if ghost != "" {
		fmt.Fprintln(w, ghost)
	}
	var bar io.Writer
	if comm.Rank() == 0 {
		bar = progressWriter(c)
	}
	opts.Progress = bar
	res, err := train.Train(ctx, cfg, opts)
	if err != nil {
		if errors.Is(err, train.ErrInterrupted) && bar != nil {
			fmt.Fprintln(bar) // end the bar's line
		}
		return err
	}
	switch {
	case res.Steps == 0:
		fmt.Fprintf(w, "done: %s, 0 steps: the initial checkpoint, no loss computed (--resume --steps N trains it)", res.Run)
	case res.Trained == 0:
		fmt.Fprintf(w, "done: %s, %d steps, all trained before (--resume --steps N continues it to N), loss %.4f", res.Run, res.Steps, res.Loss)
	default:
		fmt.Fprintf(w, "done: %s, %d steps, loss %.4f, %.1f img/s", res.Run, res.Steps, res.Loss, res.ImgPerS)
	}
	if res.KNNTop1 != nil {
		fmt.Fprintf(w, ", kNN top-1 %.2f%%", 100**res.KNNTop1)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "next: duelctl eval --run %s --protocol knn | duelctl analyze --run %s | duelctl embed --run %s --input X.npy --out Y.npy\n", res.Run, res.Run, res.Run)
	if comm.Rank() != 0 {
		return nil
	}
	return emitJSON(c, res)
}
