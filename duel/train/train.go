// Package train runs self-supervised training (duelctl train): it builds the
// data stream (a dataset, the class-imbalanced sampler, the augmentation
// pipeline), the method of package ssl and its optimizer, runs the steps of
// the paper's Algorithm 3, and keeps a run directory:
//
//	config.json        every setting used (Config), defaults and seed included
//	metrics.jsonl      one Metric per logged step
//	model.safetensors  the model: encoder tensors under torchvision's names,
//	                   other parts under their prefix (projector., ...)
//	checkpoint/        the resumable state: state.json, model.safetensors,
//	                   optimizer.safetensors, memory.bin
//
// Every random draw is a pure function of the seed and the step (the sampler,
// the augmentations, the memory negatives, MoCo's key shuffle) or lives in
// the checkpoint (the memory policy's RNG), so a resumed run continues
// exactly as an uninterrupted one. LoadRun opens a finished run for
// evaluation.
//
// A run computes on Options.Device (LoadRunOn for a finished run): the
// model is placed there (nn.To) after a check that the device's backend
// has every capability its layers need, each step's views are copied in
// once, and only what the host needs is copied out: the loss, the
// features the memory policy takes (package ssl), the kNN monitor's
// features and the checkpoints. Checkpoints hold host tensors, so a run
// trained on one device resumes or loads on any other, with the same bits
// where the kernels are the same.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/data/augment"
	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/internal/splitmix"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
)

// Options are the parts of a training run that are not settings of the
// model: where it goes, what it prints, and hooks for tests.
type Options struct {
	Out    string // run directory
	Resume bool   // continue from the checkpoint in Out
	// ContinueHint says, in the error of an interrupted run, how to go
	// on from its checkpoint ("" = "continue with --resume", duelctl
	// train's way).
	ContinueHint string
	// Device is where the model computes: "" or "cpu", or the name of a
	// registered backend ("cuda" once cuda.Available succeeded, or a test
	// device such as "hostlessfused"), see ResolveDevice. The model's
	// parameters, buffers and optimizer state live there; each step's
	// views are copied in once; the loss, the features the memory takes
	// and the checkpoints are copied out. A backend that lacks a
	// capability the model needs is refused before training starts.
	Device string

	Log      io.Writer // one human-readable line per logged step (nil: none)
	Progress io.Writer // progress bar with ETA (nil: none)

	// Train and Test replace the datasets named by the configuration
	// (tests use small synthetic ones).
	Train, Test *data.Dataset
	// AfterStep, when set, is called after every completed step.
	AfterStep func(step int)

	// DUELPolicy, when set, builds the memory's DUEL policy for an
	// admission in place of memory.NewDUEL (ssl.Config.DUELPolicy), or
	// returns nil for one it does not run: duelctl sets it to the GPU's,
	// cudaduel, for --device cuda. The decisions are the same; the log
	// says where they are made. A policy it built that is an io.Closer
	// is closed when Train returns.
	DUELPolicy func(adm memory.Admission) memory.Policy

	// Comm is the process group of data-parallel training (nil: this
	// process alone). Every rank runs Train with the same configuration
	// (checked); Config.Batch is the global batch, of which each rank
	// loads and computes its shard (dist.ShardRows); the loss is that of
	// the global batch, the gradients are summed over the ranks, the
	// memory is updated with the global batch on every rank, and the
	// BatchNorm statistics are averaged, so every rank holds the same
	// model and memory (compared every AgreeEvery steps). Rank 0 alone
	// writes the run directory, the log and the progress bar; on
	// --resume every rank reads the checkpoint in Out, which must then
	// be on a file system they share.
	Comm dist.Comm
	// AgreeEvery is how often the ranks compare their model and memory
	// (0: DefaultAgreeEvery).
	AgreeEvery int
}

// Result summarises a run.
type Result struct {
	Run   string  `json:"run"`
	Steps int     `json:"steps"`
	Loss  float64 `json:"loss"`
	// ImgPerS is the speed of the steps this call trained (0 when none).
	ImgPerS float64 `json:"img_per_s"`
	// Trained is the number of steps this call trained: Steps less those a
	// resumed run had done before (0 when it had finished).
	Trained int      `json:"trained_steps"`
	KNNTop1 *float64 `json:"knn_top1,omitempty"`
}

// ErrInterrupted is returned (wrapped) when the context is cancelled; the
// run's checkpoint is then saved at the last completed step.
var ErrInterrupted = errors.New("training interrupted")

// Train runs (or, with opts.Resume, continues) the training described by
// cfg in opts.Out.
func Train(ctx context.Context, cfg *Config, opts Options) (*Result, error) {
	c := *cfg
	if c.WarmupSteps >= c.Steps && c.Steps > 0 {
		// A warm-up longer than the run: keep a tenth. (--steps 0 keeps the
		// preset's, which a later --resume --steps N cuts as a new run of
		// N steps would.) config.json records the warm-up that ran, which
		// a run started from it (--config) keeps: say so.
		if opts.Log != nil && !opts.Resume {
			fmt.Fprintf(opts.Log, "note: --warmup-steps %d is not shorter than --steps %d: the run warms up for %d steps, as its config.json records (a run started from it with --config and more steps keeps that; give --warmup-steps again for another)\n",
				c.WarmupSteps, c.Steps, c.Steps/10)
		}
		c.WarmupSteps = c.Steps / 10
	}
	if err := c.ValidateSettings(); err != nil {
		return nil, err
	}
	// The machine's memory holds what a step keeps on the CPU: on a GPU,
	// the batch's images and the memory's rows only.
	ranks := 1
	if opts.Comm != nil {
		ranks = opts.Comm.Size()
	}
	if err := CheckMemory(c.MemoryNeedsOn(opts.Device, ranks)...); err != nil {
		return nil, err
	}
	if err := CheckApplies(&c); err != nil {
		return nil, err
	}
	if opts.Out == "" {
		return nil, fmt.Errorf("--out: empty run directory")
	}
	dev, err := ResolveDevice(opts.Device)
	if err != nil {
		return nil, err
	}
	comm := opts.Comm
	if comm == nil {
		comm = dist.Single{}
	}
	if err := (&group{comm: comm}).checkConfig(&c); err != nil {
		return nil, err
	}
	lead := comm.Rank() == 0

	// Data.
	ds := opts.Train
	if ds == nil {
		var err error
		if ds, err = data.Open(c.Dataset, c.Data, true); err != nil {
			return nil, fmt.Errorf("--dataset %s: %w", c.Dataset, err)
		}
		// config.json names the directory the data came from absolutely,
		// so that eval, analyze and --resume find it from any directory.
		if c.Data != "" && !filepath.IsAbs(c.Data) {
			if abs, err := filepath.Abs(c.Data); err == nil {
				c.Data = abs
			}
		}
	}
	ds = ds.ToRGB()
	if err := CheckDominantClass(c.DominantClass, c.Dataset, ds.NumClasses()); err != nil {
		return nil, err
	}
	mean, std := normStats(&c, ds)
	rec := recordData(ds, mean, std)
	if opts.Resume && c.TrainedOn != nil { // nil: a run started before it was recorded
		if how := c.TrainedOn.differs(rec, true); how != "" {
			return nil, dataChanged(&c, opts.Out, how)
		}
	}
	c.TrainedOn = rec
	pipe, err := augment.Preset(c.Augment, 0, mean, std)
	if err != nil {
		return nil, fmt.Errorf("--augment: %w", err)
	}
	sampler, err := data.NewSampler(ds.Labels, ds.NumClasses(), data.SamplerConfig{
		Profile: data.Profile(c.Imbalance), RhoMax: c.RhoMax, DominantClass: c.DominantClass,
		ImbalanceRatio: c.ImbalanceRatio, Seed: splitmix.Derive(c.Seed, seedSampler),
	})
	if err != nil {
		for class, n := range ds.ClassCounts() {
			if n == 0 {
				return nil, fmt.Errorf("--dataset %s: the training split has no image of class %d (%q), expected images of every class (a folder dataset's classes are its train/ and test/ class folders together): %w",
					c.Dataset, class, ds.Classes[class], err)
			}
		}
		return nil, err
	}
	// The kNN monitor's test split, opened before anything is written:
	// a dataset without one is refused with the run directory untouched.
	var knnTest *data.Dataset
	if c.KNNEvery > 0 && lead {
		if knnTest = opts.Test; knnTest == nil {
			if knnTest, err = data.Open(c.Dataset, c.Data, false); err != nil {
				return nil, fmt.Errorf("--knn-every: opening the test split: %w", err)
			}
		}
		knnTest = knnTest.ToRGB()
	}
	memPipe := pipe
	if c.MemView == "plain" {
		memPipe = augment.None(0, mean, std)
	}
	images := &datasetImages{ds: ds, pipe: memPipe, seed: splitmix.Derive(c.Seed, seedMemView)}

	// Model and optimizer, on the device; the run directory once the
	// device is known to run the model.
	duelPolicy, closePolicies, policies := policyHook(opts.DUELPolicy, opts.Log, dev)
	defer closePolicies()
	method, err := NewMethodFor(&c, MethodSetup{Images: images, Comm: comm, Device: dev, DUELPolicy: duelPolicy})
	if err != nil {
		return nil, err
	}
	if lead {
		release, err := lockRun(opts.Out, opts.Resume)
		if err != nil {
			return nil, err
		}
		defer release()
		if err := prepareDir(opts.Out, opts.Resume); err != nil {
			return nil, err
		}
	}
	for _, p := range method.Parts() {
		nn.NameParameters(p.Module)
	}
	opt, err := newOptimizer(&c, method.Parameters())
	if err != nil {
		return nil, err
	}
	sched, err := optim.CosineWithWarmup(c.LR, min(c.WarmupSteps, max(c.Steps, 1)), max(c.Steps, 1), c.MinLR) // --steps 0 runs no step
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	start, lastLoss := 0, 0.0
	if opts.Resume {
		ckpt, err := checkpointPath(opts.Out)
		if err != nil && !lead {
			return nil, fmt.Errorf("rank %d: --resume: %w (every rank reads the checkpoint: put --out on a file system the ranks share)", comm.Rank(), err)
		}
		if err != nil {
			return nil, err
		}
		st, err := loadCheckpoint(ckpt, method, opt)
		if err != nil {
			return nil, err
		}
		// Refused before config.json is rewritten: it would record fewer
		// steps than the checkpoint, model and metrics hold.
		if st.Step > c.Steps {
			return nil, fmt.Errorf("--steps: got %d, expected at least the checkpoint's step %d with --resume (a run cannot be shortened; --steps %d leaves it as it is)", c.Steps, st.Step, st.Step)
		}
		start, lastLoss = st.Step, st.Loss
	}
	grp := newGroup(comm, method, opts.AgreeEvery)
	if err := grp.broadcastModel(method); err != nil {
		return nil, err
	}
	if err := grp.agree(method, opt, start); err != nil {
		return nil, err
	}
	if opts.Resume && start >= c.Steps {
		// Nothing to train: config.json stays as it was, recording the
		// settings and precisions that computed the run, not this call's.
		return &Result{Run: opts.Out, Steps: start, Loss: lastLoss}, nil
	}
	var mlog *metricsLog
	if lead {
		prev := c.Ran
		c.Ran = ranOn(dev, comm)
		if opts.Resume && opts.Log != nil && prev != nil &&
			(prev.Precision != c.Ran.Precision || prev.ConvPrecision != c.Ran.ConvPrecision) {
			fmt.Fprintf(opts.Log, "note: the run's last segment computed its products in %s and its convolutions in %s; this one in %s and %s (--precision and --conv-precision are not settings of the run: give them again to continue as it did)\n",
				prev.Precision, prev.ConvPrecision, c.Ran.Precision, c.Ran.ConvPrecision)
		}
		// metrics.jsonl first: a log it refuses (a bad line) leaves
		// config.json as it was.
		if mlog, err = openMetrics(opts.Out, start); err != nil {
			return nil, err
		}
		defer mlog.close()
		if err := WriteConfig(opts.Out, &c); err != nil {
			return nil, err
		}
	}
	res := &Result{Run: opts.Out, Steps: start, Loss: lastLoss}
	save := func(step int, loss float64) error {
		if !lead {
			return nil
		}
		err := saveCheckpoint(opts.Out, State{Step: step, Loss: loss, Method: c.Method, Optimizer: c.Optimizer}, method, opt, modelMetadata(&c))
		if errors.Is(err, ErrDiverged) {
			return fmt.Errorf("%w (try a lower --lr than %g)", err, c.LR)
		}
		return err
	}
	if start == 0 && !opts.Resume {
		if err := save(0, 0); err != nil {
			return nil, err
		}
	}
	if start == 0 && c.KeepCheckpoints && lead {
		// The initial model (step 0) is kept too, to compare the trained
		// encoder with: when the run starts, or resumes from its initial
		// checkpoint (a run started with --steps 0), which is step 0's.
		if err := keepCheckpoint(opts.Out, 0); err != nil {
			return nil, fmt.Errorf("keeping the checkpoint of step 0: %w", err)
		}
	}
	if start > 0 && opts.Resume && c.KeepCheckpoints && lead {
		if err := keepMissed(opts.Out, start); err != nil {
			return nil, fmt.Errorf("keeping the checkpoint of step %d: %w", start, err)
		}
	}
	if start >= c.Steps {
		return res, nil
	}

	arena := nn.NewArena()
	var knn *knnMonitor
	if knnTest != nil {
		knn = newKNNMonitor(ds, knnTest, &c, mean, std, 0, ranks, arena)
	}

	loader, err := data.NewLoader(ds, sampler, pipe, data.LoaderConfig{
		BatchSize: c.Batch, Workers: c.Workers, Seed: splitmix.Derive(c.Seed, seedLoader), StartStep: int64(start),
		Rank: comm.Rank(), Ranks: comm.Size(),
	})
	if err != nil {
		return nil, err
	}
	defer loader.Close()
	for _, p := range method.Parts() {
		nn.UseArena(p.Module, arena)
	}

	var bar *progressbar.ProgressBar
	if opts.Progress != nil && lead {
		bar = progressbar.NewOptions(c.Steps,
			progressbar.OptionSetWriter(opts.Progress),
			progressbar.OptionSetDescription(c.Method),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("step"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetWidth(30),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(opts.Progress) }),
		)
		bar.Set(start)
		defer bar.Exit()
	}

	t0 := time.Now()
	elapsedBefore := 0.0 // the run's wall time before this segment
	if mlog != nil {
		elapsedBefore = mlog.elapsed
	}
	window, windowSteps := time.Now(), 0
	var dataWait time.Duration // waited for the loader in the window
	trainTime := time.Duration(0)
	for step := start; step < c.Steps; step++ {
		stop, err := dist.AnyTrue(comm, ctx.Err() != nil)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", step+1, err)
		}
		if stop {
			if serr := save(step, lastLoss); serr != nil {
				return nil, serr
			}
			hint := opts.ContinueHint
			if hint == "" {
				hint = "continue with --resume"
			}
			return res, fmt.Errorf("%w after step %d (checkpoint saved in %s: %s)", ErrInterrupted, step, opts.Out, hint)
		}
		ts := time.Now()
		b, err := loader.Next()
		if err != nil {
			return nil, err
		}
		dataWait += time.Since(ts)
		batch := &ssl.Batch{Step: step, IDs: b.IDs, Labels: b.Labels}
		for v := range batch.Views {
			// One copy in per view and step (none on the CPU).
			if batch.Views[v], err = tensor.FromSlice(b.Views[v], b.N, b.C, b.H, b.W).To(dev); err != nil {
				return nil, fmt.Errorf("step %d: copying view %d to %s: %w", step+1, v, dev, err)
			}
		}
		lr := sched.LR(step)
		opt.SetLR(lr)
		arena.Reset()
		tp := autograd.NewTape()
		if grp.reducer != nil {
			tp.TrackInputs()
		}
		l, err := method.Loss(tp, batch)
		if err != nil {
			return nil, err
		}
		lv := float64(l.Value.Item())
		if math.IsNaN(lv) || math.IsInf(lv, 0) {
			return nil, fmt.Errorf("step %d: the loss is %v (try a lower --lr than %g)", step+1, lv, c.LR)
		}
		if grp.reducer != nil {
			if err := grp.reducer.Backward(tp, l); err != nil {
				return nil, fmt.Errorf("step %d: %w", step+1, err)
			}
		} else {
			tp.Backward(l)
		}
		opt.Step()
		opt.ZeroGrad()
		if err := method.Update(batch); err != nil {
			return nil, err
		}
		if err := grp.averageBuffers(); err != nil {
			return nil, fmt.Errorf("step %d: %w", step+1, err)
		}
		loader.Release(b)
		trainTime += time.Since(ts)
		done := step + 1
		lastLoss = lv
		res.Steps, res.Loss = done, lv
		windowSteps++
		if bar != nil {
			bar.Set(done)
		}
		last := done == c.Steps
		if done%grp.every == 0 || last {
			if err := grp.agree(method, opt, done); err != nil {
				return nil, err
			}
		}
		if !lead {
			if opts.AfterStep != nil {
				opts.AfterStep(done)
			}
			continue
		}
		if done%c.LogEvery == 0 || last || (knn != nil && done%c.KNNEvery == 0) {
			m := Metric{Step: done, Loss: lv, LR: lr,
				ImgPerS:   float64(windowSteps*c.Batch) / time.Since(window).Seconds(),
				DataWaitS: dataWait.Seconds(),
				ElapsedS:  elapsedBefore + time.Since(t0).Seconds()}
			windowS := time.Since(window).Seconds()
			if grp.size() > 1 {
				m.WorldSize = grp.size()
			}
			if mem := method.Memory(); mem != nil {
				m.setMemory(mem, step, ds.NumClasses())
			}
			if knn != nil && (done%c.KNNEvery == 0 || last) {
				acc, err := knn.measure(method.Encoder())
				if err != nil {
					return nil, fmt.Errorf("kNN monitor at step %d: %w", done, err)
				}
				m.KNNTop1, m.KNN, res.KNNTop1 = &acc, knn.settings(), &acc
			}
			if err := mlog.write(&m); err != nil {
				return nil, err
			}
			if opts.Log != nil {
				logLine(opts.Log, &c, &m, windowS)
			}
			window, windowSteps, dataWait = time.Now(), 0, 0
		}
		if (c.CheckpointEvery > 0 && done%c.CheckpointEvery == 0) || last {
			if err := save(done, lv); err != nil {
				return nil, err
			}
			if c.KeepCheckpoints {
				if err := keepCheckpoint(opts.Out, done); err != nil {
					return nil, fmt.Errorf("keeping the checkpoint of step %d: %w", done, err)
				}
			}
		}
		if opts.AfterStep != nil {
			opts.AfterStep(done)
		}
	}
	res.Trained = res.Steps - start
	if s := trainTime.Seconds(); s > 0 {
		res.ImgPerS = float64(res.Trained*c.Batch) / s
	}
	if lead {
		if err := recordKernels(opts.Out, &c, dev, policies, opts.Log); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// dataBoundShare is the share of a window's time spent waiting for the
// loader from which the log line says so.
const dataBoundShare = 0.1

// logLine prints a metric for people; windowS is the time its window of
// steps took.
func logLine(w io.Writer, c *Config, m *Metric, windowS float64) {
	fmt.Fprintf(w, "step %d/%d  loss %.4f  lr %.3g  %.1f img/s", m.Step, c.Steps, m.Loss, m.LR, m.ImgPerS)
	if windowS > 0 && m.DataWaitS >= dataBoundShare*windowS {
		fmt.Fprintf(w, " (%.0f%% waiting for data: --workers)", 100*m.DataWaitS/windowS)
	}
	if m.MemoryClassEntropy != nil {
		fmt.Fprintf(w, "  memory class entropy %.3f nats (%d rows)", *m.MemoryClassEntropy, *m.MemoryRows)
	}
	if m.MemoryAgeMean != nil {
		fmt.Fprintf(w, "  age %.0f/%.0f steps", *m.MemoryAgeMean, *m.MemoryAgeMax)
	}
	if m.KNNTop1 != nil {
		fmt.Fprintf(w, "  kNN top-1 %.2f%%", 100**m.KNNTop1)
	}
	fmt.Fprintln(w)
}
