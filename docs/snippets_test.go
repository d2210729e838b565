package docs_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/memory/cudaduel"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/kernels/rows"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/nn/resnet"
	"github.com/duel-ssl/duel/tensor"
)

// The Go blocks of the guides that are not excerpts of a source file,
// each inside a function that compiles it and a test that runs it where
// a machine without a GPU can. TestGoBlocks finds each block here line
// for line (comments and alignment aside), so a change of the API that
// breaks a guide's example breaks the build of this file.

// deviceOrCPU is docs/cuda.md's "Using it".
func deviceOrCPU() (string, error) {
	if err := cuda.Available(); err != nil {
		// e.g. "cuda: libcuda.so.1 not found (no NVIDIA driver) [dlopen: ...]: use --device cpu"
		// or   "cuda: no usable GPU (cuda: cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)): use --device cpu"
		return "cpu", err
	}
	return "cuda:0", nil
}

func TestCUDAAvailableSnippet(t *testing.T) {
	dev, err := deviceOrCPU()
	switch {
	case err == nil && dev != "cuda:0":
		t.Fatalf("a usable GPU gave device %q", dev)
	case err != nil && dev != "cpu":
		t.Fatalf("no usable GPU gave device %q", dev)
	case err != nil && !strings.HasSuffix(err.Error(), "use --device cpu"):
		t.Fatalf("the error does not end as docs/cuda.md says (\"...: use --device cpu\"): %v", err)
	}
	t.Logf("device %s (%v)", dev, err)
}

// duelOnDevice is docs/cuda.md's use of cudaduel.Memory: one update of a
// memory of k rows of z features by a batch, its evictions and the kept
// rows' scores.
func duelOnDevice(d cuda.GPU, k, z int, rows, batch []float32) ([]int, []float64, error) {
	m, err := cudaduel.NewMemory(d, k, z, cudaduel.MemoryOptions{Admission: memory.Protected})
	if err != nil {
		return nil, nil, err
	}
	defer m.Close()                           // device memory is freed here, not by the GC
	if err := m.Load(rows, nil); err != nil { // K x z L2-normalised rows, oldest first (nil: compute the scores)
		return nil, nil, err
	}
	res, err := m.Update(batch) // B x z rows; res.Evicted (memory.Policy's contract), res.Kept
	if err != nil {
		return nil, nil, err
	}
	scores, err := m.Scores() // the kept rows' scores, when wanted
	return res.Evicted, scores, err
}

// unitRows returns n random L2-normalised rows of z features.
func unitRows(r *rand.Rand, n, z int) []float32 {
	x := tensor.RandN(r, n, z).Data()
	rows.L2Normalize([]int{n, z}, 1, x, x, 0)
	return x
}

func TestDUELOnDeviceSnippet(t *testing.T) {
	if _, err := deviceOrCPU(); err != nil {
		t.Skipf("no GPU: the snippet is compiled only (%v)", err)
	}
	d, err := cuda.Default()
	if err != nil {
		t.Fatal(err)
	}
	const k, z, b = 64, 16, 8
	r := rand.New(rand.NewPCG(1, 2))
	rows, batch := unitRows(r, k, z), unitRows(r, b, z)
	evicted, scores, err := duelOnDevice(d, k, z, rows, batch)
	if err != nil {
		t.Fatal(err)
	}
	want, err := memory.NewDUEL(memory.Protected).Evict(&memory.Arrival{Memory: rows, Batch: batch, Z: z})
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != k {
		t.Errorf("%d scores, want %d", len(scores), k)
	}
	for i := range want {
		if evicted[i] != want[i] {
			t.Fatalf("evicted %v, memory.DUEL %v", evicted, want)
		}
	}
}

// TestMulGradcheckSnippet is docs/extending.md's gradient check of Mul.
func TestMulGradcheckSnippet(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b := tensor.RandN(r, 2, 3), tensor.RandN(r, 2, 3)
	gradcheck.Assert(t, func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
		return autograd.Mul(tp, in[0], in[1])
	}, []*tensor.Tensor{a, b}, gradcheck.Options{})
}

// TestLayerGradcheckSnippet is docs/extending.md's check of a layer with
// its parameters.
func TestLayerGradcheckSnippet(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	layer := nn.NewLinear(4, 3, true, r)
	x := tensor.RandN(r, 5, 4)
	gradcheck.Assert(t, func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
		return layer.Forward(tp, in[0])
	}, []*tensor.Tensor{x}, gradcheck.Options{Params: []*autograd.Var{layer.Weight, layer.Bias}, MaxElems: 20})
}

// compositeCrossEntropy is docs/extending.md's loss as a composition.
func compositeCrossEntropy(tp *autograd.Tape, logits, onehot *autograd.Var) *autograd.Var {
	nll := autograd.Neg(tp, autograd.Sum(tp, autograd.Mul(tp, autograd.LogSoftmax(tp, logits, 1), onehot), 1, false))
	loss := autograd.MeanAll(tp, nll)
	return loss
}

// TestCrossEntropySnippet checks the guide's composite loss against the
// fused autograd.CrossEntropy, value and gradient, and its gradient
// against finite differences.
func TestCrossEntropySnippet(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const n, c = 6, 5
	x := tensor.RandN(r, n, c)
	targets := make([]int, n)
	onehot := tensor.New(n, c)
	for i := range targets {
		targets[i] = r.IntN(c)
		onehot.Set(1, i, targets[i])
	}
	a, b := autograd.Param(x, "a"), autograd.Param(x.Clone(), "b")
	tp := autograd.NewTape()
	fused := autograd.CrossEntropy(tp, a, targets)
	comp := compositeCrossEntropy(tp, b, autograd.Const(onehot))
	if d := math.Abs(float64(fused.Value.Item() - comp.Value.Item())); d > 1e-5 {
		t.Fatalf("composite %g, fused %g", comp.Value.Item(), fused.Value.Item())
	}
	tp.Backward(autograd.Add(tp, fused, comp))
	if d := tensor.MaxAbsDiff(a.Grad, b.Grad); d > 1e-6 {
		t.Fatalf("gradients differ by %g", d)
	}
	gradcheck.Assert(t, func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
		return compositeCrossEntropy(tp, in[0], autograd.Const(onehot))
	}, []*tensor.Tensor{x}, gradcheck.Options{})
}

// trainStep is docs/ssl-method.md's training step: one step of any
// registered method, its loss returned.
func trainStep(arena *nn.Arena, method ssl.Method, opt optim.Optimizer, batch *ssl.Batch) (float64, error) {
	arena.Reset() // recycled activations (nn.Arena)
	tp := autograd.NewTape()
	l, err := method.Loss(tp, batch) // "sample negatives from memory", forward, loss
	if err != nil {
		return 0, err
	}
	tp.Backward(l)
	opt.Step() // Adam / SGD / LARS (train adds the cosine schedule with warm-up)
	opt.ZeroGrad()
	if err := method.Update(batch); err != nil { // "momentum update", then "memory update"
		return 0, err
	}
	return float64(l.Value.Item()), nil
}

// TestTrainStepSnippet runs the guide's loop of its own on SimCLR with a
// tiny ResNet: the same fixed batch, so the loss must fall.
func TestTrainStepSnippet(t *testing.T) {
	method, err := ssl.New("simclr", ssl.Config{
		NewEncoder: func() (ssl.Encoder, error) { return resnet.New("resnet18-w4", resnet.Options{Seed: 3}) },
		ProjDim:    16, Tau: 0.5, Eps: 1, Negatives: ssl.NegBatch, BNSplits: 1, Seed: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	arena := nn.NewArena()
	for _, p := range method.Parts() {
		nn.UseArena(p.Module, arena)
	}
	opt, err := optim.NewAdam(method.Parameters(), optim.AdamConfig{LR: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	const n = 8
	batch := &ssl.Batch{IDs: make([]int64, n), Labels: make([]int32, n)}
	for i := range batch.IDs {
		batch.IDs[i] = int64(i)
	}
	batch.Views[0] = tensor.RandN(r, n, 3, 8, 8)
	batch.Views[1] = batch.Views[0].Clone()
	var losses []float64
	for step := range 4 {
		batch.Step = step
		l, err := trainStep(arena, method, opt, batch)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		losses = append(losses, l)
	}
	if !(losses[3] < losses[0]) {
		t.Errorf("losses %v: no descent on a fixed batch", losses)
	}
}
