package reproduce

import (
	"context"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
	_ "github.com/duel-ssl/duel/tensor/hostless" // registers the host-less test devices
)

// TestRunOnDevice runs the smoke grid on the host-less test device, which
// panics on any host access to its buffers: training, the linear probe and
// every measure must go through the backend, and the results must equal the
// CPU's (the same kernels behind the device's handles). A device that
// cannot run the model is refused with the capabilities it lacks. The
// D-variants' DUEL comes from Options.DUELPolicy, as on CUDA.
func TestRunOnDevice(t *testing.T) {
	g := smokeGrid(t)
	var cpuLog, devLog strings.Builder
	onCPU, err := Run(context.Background(), g, testOptions(t.TempDir(), &cpuLog))
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t.TempDir(), &devLog)
	opts.Device = "hostlessfused"
	built := 0 // DUEL policies the runs took from opts.DUELPolicy (the GPU's on CUDA)
	opts.DUELPolicy = func(adm memory.Admission) memory.Policy {
		built++
		return memory.NewDUEL(adm)
	}
	onDev, err := Run(context.Background(), g, opts)
	if err != nil {
		t.Fatalf("on hostlessfused: %v", err)
	}
	if built == 0 {
		t.Error("no run built its DUEL policy with Options.DUELPolicy")
	}
	for i, c := range onCPU.Runs {
		d := onDev.Runs[i]
		if c.Top1 != d.Top1 || c.Loss != d.Loss || *c.MemoryClassEntropy != *d.MemoryClassEntropy ||
			*c.IntraClassVariance != *d.IntraClassVariance || *c.InterClassSimilarity != *d.InterClassSimilarity {
			t.Errorf("run %s: cpu top-1 %v loss %v entropy %v intra %v inter %v, hostlessfused %v %v %v %v %v",
				c.Variant, c.Top1, c.Loss, *c.MemoryClassEntropy, *c.IntraClassVariance, *c.InterClassSimilarity,
				d.Top1, d.Loss, *d.MemoryClassEntropy, *d.IntraClassVariance, *d.InterClassSimilarity)
		}
	}

	opts = testOptions(t.TempDir(), &devLog)
	opts.Device = "hostless"
	if _, err := Run(context.Background(), g, opts); err == nil || !strings.Contains(err.Error(), "ConvBackend") {
		t.Errorf("on hostless (no capabilities): error %v, want the missing capabilities named", err)
	}
}
