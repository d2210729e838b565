package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/proctime"
	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/loss"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/nn/resnet"
	"github.com/duel-ssl/duel/tensor"
)

func benchStepCommand() *cli.Command {
	return &cli.Command{
		Name:  "step",
		Usage: "time one training step (forward + backward + SGD) of a CIFAR-stem ResNet on 32x32 images",
		Description: "Builds --arch with 10 classes, runs --warmup untimed steps and --steps timed steps of\n" +
			"supervised cross-entropy training (SGD, lr 0.1, momentum 0.9, weight decay 5e-4) on a fixed\n" +
			"random batch, then --steps forward passes without gradient (training-mode BatchNorm).\n" +
			"With a self-supervised --method it times that method's training step instead (duelctl train's\n" +
			"step on fixed random views, --batch per rank, its memory filled with random rows first so that\n" +
			"every timed step's update goes through the policy; on --device cuda the DUEL memory decides on\n" +
			"the GPU, as in duelctl train, and measures its two selection kernels over its first 12 updates:\n" +
			"--warmup 12 times the steady state); under mpirun every rank runs it (weak scaling) and\n" +
			"bench/ddp_scaling.sh compares the scaling with PyTorch DDP's.\n" +
			"Reports the median step time, images per second, forward images per second, heap\n" +
			"allocations per step (\"alloc_mb_per_step\": MiB), the peak resident set size\n" +
			"(\"peak_rss_mb\": MiB) and the process's CPU time per step, all threads together\n" +
			"(\"cpu_ms_per_step\"). bench/step_pytorch.py runs the same model in PyTorch and prints\n" +
			"the ratio.\n" + benchMachineHelp + " Under mpirun, rank 0's.\n\n" +
			"--tune-conv first measures every pass of each convolution of the model at this batch with\n" +
			"each algorithm that applies (im2col, Winograd, direct) and picks, by CPU time, the built-in\n" +
			"rule's unless another is at least 10% faster; then, if any pick differs, it times the whole\n" +
			"step with the picks and with the rules (3 alternating rounds of 3 steps) and stores in the wisdom file\n" +
			"(entry nn.conv, see DUEL_WISDOM) the picks if their step is faster, else an empty entry (the\n" +
			"rules), for later processes; the timed steps run what it stored. With --precision bf16 (or\n" +
			"--conv-precision bf16) it measures the bfloat16 algorithms instead (im2col-bf16, direct-bf16,\n" +
			"winograd-bf16: entry nn.conv.bf16).\n\n" +
			"--profile (--device cuda only) times every kernel launch, copy and memset of the timed\n" +
			"steps on the device (a pair of CUDA events around each) and prints, per kernel, the calls,\n" +
			"total ms, mean us and share of the device time, largest first (25 rows and \"other\"), then\n" +
			"the wall and summed device time of the timed steps (the difference is where the device\n" +
			"idles: launch overhead, host work, synchronisations) and the host's counts: launches,\n" +
			"copies each way with their bytes, memsets, synchronisations, cuMemAlloc/cuMemFree calls and\n" +
			"the caching allocator's requests and cache hits. --json adds it all as \"profile\" (every\n" +
			"row). The recording costs a few microseconds of host time per launch, included in the step\n" +
			"times reported with it. (DUEL_CUDA_PROFILE=1 profiles any duelctl command on --device\n" +
			"cuda from start to exit, printed to stderr.)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "arch", Value: "resnet18", Usage: "architecture: " + resnet.ValidNames},
			&cli.IntFlag{Name: "batch", Value: 32, Usage: "images per step"},
			&cli.StringFlag{Name: "method", Value: "supervised", Usage: "training method: supervised (cross-entropy), or a self-supervised method (" + strings.Join(ssl.Names(), ", ") + ": its training step as duelctl train runs it, on random views; with --dist, data-parallel)"},
			&cli.IntFlag{Name: "threads", Usage: fmt.Sprintf("compute threads of this process (0: GOMAXPROCS, all cores), at most %d", maxBenchThreads)},
			distFlag,
			&cli.IntFlag{Name: "steps", Value: 5, Usage: "timed steps (the median is reported), at most 1000000"},
			&cli.IntFlag{Name: "warmup", Value: 2, Usage: "untimed steps before timing, at most 1000000"},
			&cli.IntFlag{Name: "size", Value: 32, Usage: "input height and width in pixels"},
			&cli.IntFlag{Name: "memory-size", Usage: "with a self-supervised --method that keeps a memory: its rows K (0: the cpu-small preset's, 2048; at most 16777216)"},
			&cli.BoolFlag{Name: "tune-conv", Usage: "measure the convolution algorithms of this model and batch and store the fastest in the wisdom file"},
			&cli.BoolFlag{Name: "profile", Usage: "with --device cuda: time each kernel, copy and memset of the timed steps on the device and print the table (and the JSON field \"profile\")"},
			deviceFlag,
			precisionFlag,
			convPrecisionFlag,
			jsonFlag,
		},
		Action: runBenchStep,
	}
}

// stepResult is the JSON answer of bench step.
type stepResult struct {
	benchMachine
	Arch   string `json:"arch"`
	Device string `json:"device"`
	// Precision and ConvPrecision are the precisions of the matrix products
	// and of the convolutions (fp32 or bf16 on the CPU; fp32, tf32 or bf16
	// on a GPU).
	Precision      string    `json:"precision,omitempty"`
	ConvPrecision  string    `json:"conv_precision,omitempty"`
	Batch          int       `json:"batch"`
	Threads        int       `json:"threads"`
	ImgPerS        float64   `json:"img_per_s"`
	StepMS         float64   `json:"step_ms"`
	ForwardImgPerS float64   `json:"forward_img_per_s"`
	AllocsPerStep  float64   `json:"allocs_per_step"`
	AllocMBPerStep float64   `json:"alloc_mb_per_step"`
	PeakRSSMB      float64   `json:"peak_rss_mb"`
	CPUMSPerStep   float64   `json:"cpu_ms_per_step"`
	Parameters     int       `json:"parameters"`
	StepMSAll      []float64 `json:"step_ms_all"`
	// Kernels is what the device chose by measuring during the warm-up
	// and the steps (kernelChoices; none on the CPU).
	Kernels []string `json:"kernels,omitempty"`
	// Profile is the device profile of the timed steps (--profile):
	// every kernel's row, largest total first.
	Profile *cuda.Profile `json:"profile,omitempty"`
}

func runBenchStep(c *cli.Context) error {
	devName, err := computeDevice(c)
	if err != nil {
		return err
	}
	batch, steps, warmup, size := c.Int("batch"), c.Int("steps"), c.Int("warmup"), c.Int("size")
	if n := c.Int("threads"); n < 0 || n > maxBenchThreads {
		return flagError("threads", n, fmt.Sprintf("an integer in [0, %d] (0 = GOMAXPROCS)", maxBenchThreads))
	} else if n > 0 {
		// Restored on return: a run in a process (the tests') does not
		// leave the next one this setting.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	if c.Bool("profile") && devName != "cuda" {
		return fmt.Errorf("--profile: times the CUDA kernels on the device; it needs --device cuda (got --device %s)", devName)
	}
	m := c.String("method")
	if _, ok := ssl.Lookup(m); !ok && m != "supervised" {
		return flagError("method", fmt.Sprintf("%q", m), "supervised, "+strings.Join(ssl.Names(), ", "))
	}
	if err := checkBenchStepFlags(c, m, batch, steps, warmup, size); err != nil {
		return err
	}
	if m != "supervised" {
		comm, err := openGroup(c)
		if err != nil {
			return err
		}
		if err := runBenchSSLStep(c, comm, devName); err != nil {
			failGroup(comm, err)
			return err
		}
		return comm.Close()
	}
	arch := c.String("arch")
	model, err := resnet.New(arch, resnet.Options{NumClasses: 10, Seed: 1})
	if err != nil {
		return fmt.Errorf("--arch: %w", err)
	}
	opt, err := optim.NewSGD(model.Parameters(), optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 5e-4})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(1, 2))
	x := tensor.New(batch, 3, size, size)
	xd := x.Data()
	for i := range xd {
		xd[i] = float32(r.NormFloat64())
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = r.IntN(10)
	}
	dev, err := train.ResolveDevice(devName)
	if err != nil {
		return err
	}
	sync := func() error { return nil }
	if dev != tensor.CPU {
		if c.Bool("tune-conv") {
			return fmt.Errorf("--tune-conv: tunes the CPU's convolutions; drop it with --device %s", devName)
		}
		if err := nn.To(model, dev); err != nil {
			return fmt.Errorf("--device %s: %w", devName, err)
		}
		if x, err = x.To(dev); err != nil {
			return fmt.Errorf("--device %s: %w", devName, err)
		}
		if sync, err = deviceSync(dev); err != nil {
			return err
		}
	}
	input := autograd.NewVar(x, false)
	var tuned *convTuning
	if c.Bool("tune-conv") {
		tuned = tuneConvs(c, model, input)
	}
	// Activations, their gradients and scratch are recycled step to step.
	arena := nn.NewArena()
	model.UseArena(arena)
	step := func() error {
		arena.Reset()
		tp := autograd.NewTape()
		out := model.Forward(tp, input)
		l := loss.CrossEntropy(tp, out, labels)
		tp.Backward(l)
		opt.Step()
		opt.ZeroGrad()
		return sync()
	}
	if tuned != nil {
		restore, err := tuned.settle(c, step)
		if err != nil {
			return err
		}
		defer restore() // the process's algorithms as they were (a caller in-process: the tests)
	}
	for range warmup {
		if err := step(); err != nil {
			return err
		}
	}
	prof, err := startStepProfile(c)
	if err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs, bytes := ms.Mallocs, ms.TotalAlloc
	cpu0 := proctime.CPUOrZero()
	times := make([]float64, steps)
	for i := range steps {
		t0 := time.Now()
		if err := step(); err != nil {
			return err
		}
		times[i] = float64(time.Since(t0).Microseconds()) / 1e3
	}
	cpuMS := (proctime.CPUOrZero() - cpu0).Seconds() * 1e3 / float64(steps)
	runtime.ReadMemStats(&ms)
	profile, err := stopStepProfile(prof)
	if err != nil {
		return err
	}
	res := stepResult{
		Arch: arch, Batch: batch, Threads: runtime.GOMAXPROCS(0),
		StepMS:         median(times),
		AllocsPerStep:  float64(ms.Mallocs-mallocs) / float64(steps),
		AllocMBPerStep: float64(ms.TotalAlloc-bytes) / float64(steps) / (1 << 20),
		Parameters:     0,
		StepMSAll:      times,
		CPUMSPerStep:   cpuMS,
		Profile:        profile,
	}
	for _, p := range model.Parameters() {
		res.Parameters += p.Value.Numel()
	}
	res.ImgPerS = float64(batch) / res.StepMS * 1e3
	ftimes := make([]float64, steps)
	for i := range steps {
		t0 := time.Now()
		arena.Reset()
		model.Forward(nil, input)
		if err := sync(); err != nil {
			return err
		}
		ftimes[i] = float64(time.Since(t0).Microseconds()) / 1e3
	}
	res.ForwardImgPerS = float64(batch) / median(ftimes) * 1e3
	res.PeakRSSMB = peakRSSMB()
	res.Device = string(dev)
	where := res.Device
	if res.Precision, res.ConvPrecision, err = devicePrecisions(devName); err != nil {
		return err
	}
	where += precisionNote(devName, res.Precision, res.ConvPrecision)
	res.benchMachine = benchMachineOn(devName)
	res.benchMachine.write(c.App.Writer)
	fmt.Fprintf(c.App.Writer, "%s batch %d on %s (%d threads, %d parameters): train step %s = %s img/s; forward %s img/s; %.0f allocs (%.1f MiB) per step; peak RSS %.0f MiB; CPU time %s per step (all threads)\n",
		arch, batch, where, res.Threads, res.Parameters, fmtStepMS(res.StepMS), fmtRate(res.ImgPerS), fmtRate(res.ForwardImgPerS), res.AllocsPerStep, res.AllocMBPerStep, res.PeakRSSMB, fmtMS(res.CPUMSPerStep))
	if profile != nil {
		if err := writeStepProfile(c.App.Writer, *profile, steps); err != nil {
			return err
		}
	}
	res.Kernels = kernelChoices(dev)
	writeKernelChoices(c.App.Writer, res.Kernels)
	return emitJSON(c, res)
}

// maxBenchThreads bounds bench step's --threads (GOMAXPROCS): far more
// Ps than cores only slows the runtime down (a GC worker per P), and
// --threads 100000 never finished a step.
const maxBenchThreads = 1024

// maxBenchSteps bounds bench step's --steps and --warmup (and bench duel's
// --updates): a median over a million steps is as steady as it gets, and
// the timings of every step are kept.
const maxBenchSteps = 1_000_000

// checkBenchStepFlags checks bench step's flags before anything is built
// or allocated: the ranges, --memory-size and --dist whatever the method,
// a self-supervised method's --batch against its ghost BatchNorm groups,
// and that the batch's images and first activations fit this machine's
// memory.
func checkBenchStepFlags(c *cli.Context, method string, batch, steps, warmup, size int) error {
	switch {
	case batch < 2:
		return flagError("batch", batch, "an integer >= 2 (BatchNorm needs two samples)")
	case steps < 1 || steps > maxBenchSteps:
		return flagError("steps", steps, fmt.Sprintf("an integer in [1, %d]", maxBenchSteps))
	case warmup < 0 || warmup > maxBenchSteps:
		return flagError("warmup", warmup, fmt.Sprintf("an integer in [0, %d]", maxBenchSteps))
	case size < 8 || size > 1024:
		return flagError("size", size, "an integer in [8, 1024]")
	}
	if k := c.Int("memory-size"); k < 0 || k > train.MaxMemorySize {
		return flagError("memory-size", k, fmt.Sprintf("an integer >= 0 (0 = the preset's), at most %d", train.MaxMemorySize))
	}
	switch d := c.String(distFlag.Name); d {
	case "auto", "mpi", "none":
	default:
		return flagError(distFlag.Name, fmt.Sprintf("%q", d), "auto, mpi or none")
	}
	views := 1
	if method != "supervised" {
		views = 2
		cfg, err := train.Preset(train.DefaultPreset, method)
		if err != nil {
			return fmt.Errorf("--method: %w", err)
		}
		// Each rank keeps the preset's ghost BatchNorm groups over its
		// --batch, of at least 2 images each.
		if g := cfg.BNSplits; batch%g != 0 || batch < 2*g {
			return flagError("batch", batch, fmt.Sprintf("a multiple of %d, at least %d (%s's %d ghost BatchNorm groups per rank, of at least 2 images each)", g, 2*g, method, g))
		}
	}
	// The tape keeps the stem's convolution, BatchNorm and ReLU outputs.
	need := float64(views) * train.ForwardBytes(c.String("arch"), "cifar", batch, size, size, 3)
	return train.CheckMemory(train.MemoryNeed{Flag: "batch", Got: batch, Bytes: need, What: "for the batch's images and first activations"})
}

// sslStepNeeds returns what one of ranks processes of bench step's
// self-supervised step holds in host memory with its model on device, as
// duelctl train checks it (train.Config.MemoryNeedsAt), for views of size
// x size pixels: the side benchmarked (--size), not the preset dataset's
// (the activations of 1024x1024 views are a thousand times those of
// CIFAR's 32x32). The views' part says the side, which --size sets.
func sslStepNeeds(cfg *train.Config, device string, ranks, size int) []train.MemoryNeed {
	needs := cfg.MemoryNeedsAt(device, ranks, size)
	for i := range needs {
		if needs[i].Flag == "batch" {
			needs[i].What = fmt.Sprintf("for the views of the batch (%dx%d pixels, --size) and their activations", size, size)
		}
	}
	return needs
}

// startStepProfile starts the device profile of bench step --profile
// (nil without the flag).
func startStepProfile(c *cli.Context) (*cuda.Profiling, error) {
	if !c.Bool("profile") {
		return nil, nil
	}
	be, err := cuda.Registered()
	if err != nil {
		return nil, fmt.Errorf("--profile: %w", err)
	}
	prof, err := be.StartProfile()
	if err != nil {
		return nil, fmt.Errorf("--profile: %w", err)
	}
	return prof, nil
}

// stopStepProfile stops prof (nil: none) and returns its profile.
func stopStepProfile(prof *cuda.Profiling) (*cuda.Profile, error) {
	if prof == nil {
		return nil, nil
	}
	p, err := prof.Stop()
	if err != nil {
		return nil, fmt.Errorf("--profile: %w", err)
	}
	return &p, nil
}

// stepProfileTop is the number of rows bench step --profile prints.
const stepProfileTop = 25

// writeStepProfile prints the profile of steps timed training steps: a
// header with the per-step figures, then the table (25 rows and "other").
func writeStepProfile(w io.Writer, p cuda.Profile, steps int) error {
	n := float64(steps)
	if _, err := fmt.Fprintf(w, "profile of the %d timed steps (device time per kernel, each between two CUDA events; step times above include the recording): per step %.2f ms wall, %.2f ms on the device, %.2f ms idle, %.0f launches\n",
		steps, p.WallMS/n, p.DeviceMS/n, (p.WallMS-p.DeviceMS)/n, float64(p.Launches)/n); err != nil {
		return err
	}
	return p.Top(stepProfileTop).WriteTable(w)
}

// convTuning is what --tune-conv measured: the picks of conv.Tune for the
// model's convolutions, in the bfloat16 entry or the float32 one.
type convTuning struct {
	choices []conv.Choice
	bf16    bool
}

// tuneConvs runs model once to learn the geometry of its convolutions
// and tunes them (conv.Tune; the bfloat16 algorithms when the CPU's
// convolutions are in bf16).
func tuneConvs(c *cli.Context, model *resnet.ResNet, input *autograd.Var) *convTuning {
	model.Forward(autograd.NewTape(), input)
	var shapes []nn.ConvShape
	seen := map[nn.ConvShape]bool{}
	for _, m := range nn.Modules(model) {
		if cv, ok := m.Module.(*nn.Conv2d); ok {
			if s, ok := cv.LastShape(); ok && !seen[s] {
				seen[s] = true
				shapes = append(shapes, s)
			}
		}
	}
	_, convs := tensor.CPUPrecisions()
	bf16 := convs == "bf16"
	return &convTuning{conv.Tune(shapes, conv.TuneOptions{Progress: c.App.ErrWriter, BF16: bf16}), bf16}
}

// timeStepWith runs step once untimed and tuneSteps times timed with the
// convolutions' tuned table set to choices (nil: the built-in rules), and
// returns the median step in milliseconds; the table in use before is put
// back.
func timeStepWith(step func() error, choices []conv.Choice, bf16 bool) (float64, error) {
	restore, err := conv.UseChoices(choices, bf16)
	if err != nil {
		return 0, err
	}
	defer restore()
	times := make([]float64, 0, tuneSteps)
	for i := range tuneSteps + 1 {
		t0 := time.Now()
		if err := step(); err != nil {
			return 0, err
		}
		if i > 0 {
			times = append(times, float64(time.Since(t0).Microseconds())/1e3)
		}
	}
	return median(times), nil
}

// tuneRounds and tuneSteps are the alternating rounds, and the timed
// steps of each (after one untimed), in which --tune-conv times the step
// with the tuned picks and with the built-in rules.
const (
	tuneRounds = 3
	tuneSteps  = 3
)

// settle times step with the tuned picks and with the built-in rules,
// alternating (tuneRounds rounds, the median of tuneSteps steps each),
// keeps the picks if the median of their rounds is lower, else the rules
// (an empty entry), stores what it keeps in the wisdom file and leaves it
// in use until restore, which puts back the algorithms in use before.
func (t *convTuning) settle(c *cli.Context, step func() error) (restore func(), err error) {
	changed := 0
	for _, ch := range t.choices {
		changed += ch.FromRules(t.bf16)
	}
	var keep []conv.Choice
	if changed == 0 {
		fmt.Fprintln(c.App.ErrWriter, "the tuned algorithms are the built-in rules' on every pass")
	} else {
		variants := [2][]conv.Choice{nil, t.choices} // the rules, the picks
		var rounds [2][]float64
		for range tuneRounds {
			for v, ch := range variants {
				ms, err := timeStepWith(step, ch, t.bf16)
				if err != nil {
					return nil, err
				}
				rounds[v] = append(rounds[v], ms)
			}
		}
		rules, picks := median(rounds[0]), median(rounds[1])
		verdict := "kept the built-in rules"
		if picks < rules {
			keep, verdict = t.choices, "kept the tuned algorithms"
		}
		fmt.Fprintf(c.App.ErrWriter, "step %.1f ms with the tuned algorithms (%d passes differ from the rules), %.1f ms with the built-in rules (medians of %d alternating rounds of %d steps): %s\n",
			picks, changed, rules, tuneRounds, tuneSteps, verdict)
	}
	restore, err = conv.UseChoices(keep, t.bf16)
	if err != nil {
		return nil, err
	}
	save, entry := conv.SaveTuning, conv.WisdomEntry
	if t.bf16 {
		save, entry = conv.SaveTuningBF16, conv.WisdomEntryBF16
	}
	path, replaced, err := save(keep)
	if replaced != nil {
		fmt.Fprintf(c.App.ErrWriter, "duel: replaced an unusable wisdom file: %v\n", replaced)
	}
	if err != nil {
		restore()
		return nil, err
	}
	if path == "" {
		fmt.Fprintln(c.App.ErrWriter, "wisdom is off (DUEL_WISDOM): the tuning was not stored")
		return restore, nil
	}
	if len(keep) == 0 {
		fmt.Fprintf(c.App.ErrWriter, "stored an empty entry %s in %s: later runs use the built-in rules\n", entry, path)
		return restore, nil
	}
	fmt.Fprintf(c.App.ErrWriter, "stored %d convolution shapes in %s (entry %s); later runs use them\n", len(keep), path, entry)
	return restore, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// peakRSSMB returns the process's peak resident set size (VmHWM) in MiB, or
// 0 where /proc is unavailable.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseFloat(f[0], 64)
				if err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}
