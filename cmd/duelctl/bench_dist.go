package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
)

// sslStepResult is the JSON answer of bench step for a self-supervised
// method, on one process or on every rank of an MPI job.
type sslStepResult struct {
	benchMachine
	Arch   string `json:"arch"`
	Method string `json:"method"`
	Device string `json:"device"`
	// Precision and ConvPrecision are the precisions of the matrix products
	// and of the convolutions (fp32 or bf16 on the CPU; fp32, tf32 or bf16
	// on a GPU).
	Precision     string `json:"precision,omitempty"`
	ConvPrecision string `json:"conv_precision,omitempty"`
	// Memory says where the method's memory policy decides ("duel on
	// cuda:0", "fifo on the host"; empty without a memory), which the
	// memory, filled before the steps, runs at every timed step.
	Memory       string    `json:"memory,omitempty"`
	Ranks        int       `json:"ranks"`
	BatchPerRank int       `json:"batch_per_rank"`
	Threads      int       `json:"threads"`
	ImgPerS      float64   `json:"img_per_s"` // images of all ranks per second
	StepMS       float64   `json:"step_ms"`
	Buckets      int       `json:"buckets,omitempty"`
	Overlapped   int       `json:"overlapped_buckets,omitempty"` // buckets whose all-reduce started during backward
	StepMSAll    []float64 `json:"step_ms_all"`
	// Profile is the device profile of the timed steps (--profile).
	Profile *cuda.Profile `json:"profile,omitempty"`
	// Kernels is what the device chose by measuring during the warm-up
	// and the steps: the products' kernels, the DUEL memory's steps
	// kernel and move (kernelChoices; none on the CPU).
	Kernels []string `json:"kernels,omitempty"`
}

// runBenchSSLStep times the training step of a self-supervised method
// (train's step: loss, backward with the gradient all-reduce, optimizer
// step, momentum and memory update) on fixed random views, with
// --batch images per rank. Under mpirun every rank runs it (weak scaling:
// the global batch is ranks x --batch) and rank 0 prints; img_per_s counts
// the images of every rank. bench/ddp_scaling.sh compares its scaling with
// PyTorch DDP's. On devName's device (a computeDevice result) the method
// computes there, its DUEL memory deciding there too on CUDA (as train
// does), and each step ends by waiting for the device. The memory, if any,
// is filled with random rows first, so that every step's update goes
// through its policy, as in a long run.
func runBenchSSLStep(c *cli.Context, comm dist.Comm, devName string) error {
	method, arch := c.String("method"), c.String("arch")
	batch, steps, warmup, size := c.Int("batch"), c.Int("steps"), c.Int("warmup"), c.Int("size")
	cfg, err := train.Preset(train.DefaultPreset, method)
	if err != nil {
		return fmt.Errorf("--method: %w", err)
	}
	ranks := comm.Size()
	cfg.Arch, cfg.Batch, cfg.Optimizer, cfg.LR, cfg.WarmupSteps = arch, batch*ranks, "sgd", 0.1, 0
	switch k := c.Int("memory-size"); {
	case k < 0:
		return flagError("memory-size", k, "an integer >= 0 (0 = the preset's)")
	case k > 0:
		cfg.MemorySize = k
	}
	cfg.BNSplits *= ranks // each rank keeps the preset's ghost groups over its --batch
	if batch%(cfg.BNSplits/ranks) != 0 || batch/(cfg.BNSplits/ranks) < 2 {
		return flagError("batch", batch, fmt.Sprintf("a multiple of %d with at least 2 images per group (%s's %d ghost BatchNorm groups per rank)", cfg.BNSplits/ranks, method, cfg.BNSplits/ranks))
	}
	if err := cfg.ValidateSettings(); err != nil {
		return err
	}
	// The memory's rows and policy state, the heads and the views, as
	// duelctl train checks them (the process was killed at the largest
	// --memory-size): what a rank holds in this machine's memory, its
	// share of the views (--batch) and, on --device cuda, not the networks
	// and activations, which are on the GPU; views of --size pixels.
	if err := train.CheckMemory(sslStepNeeds(&cfg, devName, ranks, size)...); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(1, uint64(comm.Rank())))
	images := ssl.ImageSourceFunc(func(dst []float32, _ []int64, _ int) error {
		for i := range dst {
			dst[i] = float32(r.NormFloat64())
		}
		return nil
	})
	dev, err := train.ResolveDevice(devName)
	if err != nil {
		return err
	}
	duelPolicy, err := duelPolicyOn(devName)
	if err != nil {
		return err
	}
	where := "the host"
	var closers []io.Closer // the device policies built, freed at the end
	var built []any         // and reporting their kernels
	defer func() {
		for _, cl := range closers {
			cl.Close()
		}
	}()
	setup := train.MethodSetup{Images: images, Comm: comm, Device: dev}
	if duelPolicy != nil {
		setup.DUELPolicy = func(adm memory.Admission) memory.Policy {
			p := duelPolicy(adm)
			if cl, ok := p.(io.Closer); ok {
				closers, where = append(closers, cl), string(dev)
			}
			built = append(built, p)
			return p
		}
	}
	m, err := train.NewMethodFor(&cfg, setup)
	if err != nil {
		return err
	}
	memoryAt := ""
	if mem := m.Memory(); mem != nil {
		memoryAt = mem.Policy().Name() + " on " + where
		if err := fillMemory(mem, rand.New(rand.NewPCG(7, 7))); err != nil { // the same rows on every rank
			return err
		}
	}
	sync := func() error { return nil }
	if dev != tensor.CPU {
		if sync, err = deviceSync(dev); err != nil {
			return err
		}
	}
	opt, err := optim.NewSGD(m.Parameters(), optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 5e-4})
	if err != nil {
		return err
	}
	b := &ssl.Batch{IDs: make([]int64, batch*ranks), Labels: make([]int32, batch*ranks)}
	for i := range b.IDs {
		b.IDs[i], b.Labels[i] = int64(i), -1
	}
	for v := range b.Views {
		x := tensor.New(batch, 3, size, size)
		for i, d := 0, x.Data(); i < len(d); i++ {
			d[i] = float32(r.NormFloat64())
		}
		b.Views[v] = x
	}
	var reducer *dist.Reducer
	if ranks > 1 {
		reducer = dist.NewReducer(comm, m.Parameters(), 0)
	}
	arena := nn.NewArena()
	for _, p := range m.Parts() {
		nn.UseArena(p.Module, arena)
	}
	step := func(s int) error {
		b.Step = s
		arena.Reset()
		tp := autograd.NewTape()
		if reducer != nil {
			tp.TrackInputs()
		}
		l, err := m.Loss(tp, b)
		if err != nil {
			return err
		}
		if reducer != nil {
			if err := reducer.Backward(tp, l); err != nil {
				return err
			}
		} else {
			tp.Backward(l)
		}
		opt.Step()
		opt.ZeroGrad()
		if err := m.Update(b); err != nil {
			return err
		}
		return sync()
	}
	for s := range warmup {
		if err := step(s); err != nil {
			return err
		}
	}
	if err := comm.Barrier(); err != nil {
		return err
	}
	prof, err := startStepProfile(c)
	if err != nil {
		return err
	}
	times := make([]float64, steps)
	for i := range steps {
		t0 := time.Now()
		if err := step(warmup + i); err != nil {
			return err
		}
		times[i] = float64(time.Since(t0).Microseconds()) / 1e3
	}
	profile, err := stopStepProfile(prof)
	if err != nil {
		return err
	}
	// Every rank's step ends with the same collectives, so rank 0's times
	// are the job's; the slowest rank's median is reported all the same.
	med := []float64{median(times)}
	if ranks > 1 {
		all := make([]byte, 8*ranks)
		if err := comm.AllGather(dist.Float64Bytes(med), all); err != nil {
			return err
		}
		for _, v := range bytesFloat64(all) {
			med[0] = max(med[0], v)
		}
	}
	res := sslStepResult{Arch: arch, Method: method, Device: string(dev), Memory: memoryAt, Ranks: ranks, BatchPerRank: batch, Threads: runtime.GOMAXPROCS(0),
		StepMS: med[0], ImgPerS: float64(batch*ranks) / med[0] * 1e3, StepMSAll: times, Profile: profile}
	on := res.Device
	if res.Precision, res.ConvPrecision, err = devicePrecisions(devName); err != nil {
		return err
	}
	on += precisionNote(devName, res.Precision, res.ConvPrecision)
	if reducer != nil {
		res.Buckets, res.Overlapped = reducer.Buckets(), reducer.Overlapped
	}
	if comm.Rank() != 0 {
		return nil
	}
	res.benchMachine = benchMachineOn(devName)
	res.benchMachine.write(c.App.Writer)
	fmt.Fprintf(c.App.Writer, "%s %s on %s, %d rank(s) x batch %d (%d threads each): step %s = %s img/s",
		method, arch, on, ranks, batch, res.Threads, fmtStepMS(res.StepMS), fmtRate(res.ImgPerS))
	if memoryAt != "" {
		fmt.Fprintf(c.App.Writer, "; memory full, %s", memoryAt)
	}
	if reducer != nil {
		fmt.Fprintf(c.App.Writer, "; %d gradient buckets, %d started during backward", res.Buckets, res.Overlapped)
	}
	fmt.Fprintln(c.App.Writer)
	if profile != nil {
		if err := writeStepProfile(c.App.Writer, *profile, steps); err != nil {
			return err
		}
	}
	res.Kernels = kernelChoices(dev, built...)
	writeKernelChoices(c.App.Writer, res.Kernels)
	return emitJSON(c, res)
}

// bytesFloat64 reads little-endian float64 values.
func bytesFloat64(b []byte) []float64 {
	out := make([]float64, len(b)/8)
	copy(dist.Float64Bytes(out), b)
	return out
}

// fillMemory fills mem with random rows drawn from r (ids -1, -2, ...,
// no real sample's) so that every later Add goes through its policy.
func fillMemory(mem *memory.Memory, r *rand.Rand) error {
	return fillMemoryBy(mem, r, max(fillValues/mem.Dim(), 1))
}

// fillValues is about the values fillMemory draws and adds at once: the
// memory is filled a few thousand rows at a time (4096 of 256 values),
// so that filling it never holds a second copy of it.
const fillValues = 1 << 20

// fillMemoryBy is fillMemory adding chunk rows at a time: the same rows
// (drawn in the same order), ids and steps as one Add of them all, and
// as many rows seen.
func fillMemoryBy(mem *memory.Memory, r *rand.Rand, chunk int) error {
	n, z := mem.Size()-mem.Len(), mem.Dim()
	if n <= 0 {
		return nil
	}
	chunk = min(chunk, n)
	rows, ids := make([]float32, chunk*z), make([]int64, chunk)
	for at := 0; at < n; at += chunk {
		c := min(chunk, n-at)
		rows, ids := rows[:c*z], ids[:c]
		for i := range rows {
			rows[i] = float32(r.NormFloat64())
		}
		for i := range ids {
			ids[i] = -1 - int64(at+i)
		}
		if _, err := mem.Add(rows, ids, nil, 0); err != nil {
			return fmt.Errorf("filling the memory: %w", err)
		}
	}
	return nil
}
