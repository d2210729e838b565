package train

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/memory/cudaduel"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/internal/cudatest"
)

// TestTrainFakeCUDA runs TestTrainOnCUDA in a child process whose CUDA
// driver is the fake libcuda of internal/cudatest: training goes through
// the whole CUDA code path (driver bindings, stream, allocator, launches of
// the real kernel sources, emulated on the CPU) on a machine without a
// GPU, for two methods (the emulator is slow), and D-MoCo's memory
// deciding on the GPU (TestTrainDUELOnCUDA). Skipped, saying so, while
// the CUDA backend lacks a layer's capability.
func TestTrainFakeCUDA(t *testing.T) {
	out, err := cudatest.RunOnFakeDriver(t, "^(TestTrainOnCUDA|TestTrainDUELOnCUDA)$")
	if m := regexp.MustCompile(`the CUDA backend cannot train yet: [^\n]*`).FindString(out); m != "" && err == nil {
		t.Skipf("%s", m)
	}
	if err != nil || !strings.Contains(out, "--- PASS: TestTrainOnCUDA") || !strings.Contains(out, "--- PASS: TestTrainDUELOnCUDA") {
		t.Fatalf("with the fake driver: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestTrainOnCUDA trains every method a few steps of the tiny preset on
// the GPU and on the CPU (GPU only): the runs finish, and their losses
// agree step by step within float32 summation-order tolerance (the CUDA
// kernels sum in other orders than the CPU's). A CUDA backend that still
// lacks a layer's capability skips, naming it.
func TestTrainOnCUDA(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	// The comparison is to float32 summation order: the convolutions run
	// in the products' precision (FP32 unless $DUEL_CUDA_PRECISION says
	// otherwise), not their default TF32, unless
	// $DUEL_CUDA_CONV_PRECISION asks for one.
	if _, set := os.LookupEnv(cuda.EnvConvPrecision); !set {
		be, err := cuda.Registered()
		if err != nil {
			t.Fatal(err)
		}
		defer be.SetConvPrecision(be.ConvPrecision())
		be.SetConvPrecision(be.Precision())
	}
	methods, steps := ssl.Names(), 3
	if cudatest.InFakeChild() {
		methods, steps = []string{"dmoco", "simclr"}, 2
	}
	for _, name := range methods {
		t.Run(name, func(t *testing.T) {
			c := tinyConfig(t, name)
			c.Steps, c.KNNEvery = steps, steps
			cpuDir, gpuDir := t.TempDir(), t.TempDir()
			if _, err := Train(context.Background(), c, tinyOptions(cpuDir)); err != nil {
				t.Fatal(err)
			}
			opts := tinyOptions(gpuDir)
			opts.Device = "cuda"
			res, err := Train(context.Background(), c, opts)
			if ce := (*CapabilityError)(nil); errors.As(err, &ce) {
				t.Skipf("the CUDA backend cannot train yet: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Steps != c.Steps || res.KNNTop1 == nil {
				t.Errorf("result %+v", res)
			}
			onCPU, err := ReadMetrics(cpuDir)
			if err != nil {
				t.Fatal(err)
			}
			onGPU, err := ReadMetrics(gpuDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(onCPU) != len(onGPU) {
				t.Fatalf("%d metric lines on the GPU, %d on the CPU", len(onGPU), len(onCPU))
			}
			for i := range onCPU {
				a, b := onCPU[i].Loss, onGPU[i].Loss
				t.Logf("step %d: loss %.6f on the CPU, %.6f on the GPU", onCPU[i].Step, a, b)
				if math.IsNaN(b) || math.Abs(a-b) > 1e-3*math.Max(1, math.Abs(a)) {
					t.Errorf("step %d: loss %v on the GPU, %v on the CPU", onCPU[i].Step, b, a)
				}
			}
		})
	}
}

// teeDUEL is the GPU's DUEL policy checked against memory.NewDUEL on every
// arrival of a training run.
type teeDUEL struct {
	gpu      memory.Policy
	cpu      *memory.DUEL
	arrivals int
	t        *testing.T
}

func (p *teeDUEL) Name() string { return p.gpu.Name() }

func (p *teeDUEL) Evict(a *memory.Arrival) ([]int, error) {
	got, err := p.gpu.Evict(a)
	if err != nil {
		return nil, err
	}
	want, err := p.cpu.Evict(a)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(got, want) {
		p.t.Errorf("arrival %d: the GPU evicted %v, memory.NewDUEL %v", p.arrivals, got, want)
	}
	p.arrivals++
	return got, nil
}

func (p *teeDUEL) Close() error { return p.gpu.(io.Closer).Close() }

// TestTrainDUELOnCUDA trains D-MoCo on the GPU with its memory deciding
// there (cudaduel, as duelctl train --device cuda does), every decision
// checked against memory.NewDUEL's on the same arrival (GPU only; the
// fake driver's child runs it).
func TestTrainDUELOnCUDA(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	dev, err := cuda.Default()
	if err != nil {
		t.Fatal(err)
	}
	c := tinyConfig(t, "dmoco")
	c.MemorySize, c.Steps, c.KNNEvery = 16, 3, 0 // the policy decides from the second step
	var tees []*teeDUEL
	var log bytes.Buffer
	opts := tinyOptions(t.TempDir())
	opts.Device, opts.Log = "cuda", &log
	opts.DUELPolicy = func(adm memory.Admission) memory.Policy {
		p := &teeDUEL{gpu: cudaduel.PolicyFor(dev)(adm), cpu: memory.NewDUEL(adm), t: t}
		tees = append(tees, p)
		return p
	}
	if _, err := Train(context.Background(), c, opts); err != nil {
		t.Fatal(err)
	}
	if len(tees) != 1 || tees[0].arrivals < 2 || !strings.Contains(log.String(), "memory: duel (protected) decides on cuda:0") {
		t.Fatalf("%d policies built, log:\n%s", len(tees), log.String())
	}
	t.Logf("%d arrivals decided on the GPU, as memory.NewDUEL decided them", tees[0].arrivals)
}
