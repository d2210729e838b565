package train

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// runFiles are the files of a run directory that must not depend on the
// device the run computed on.
var runFiles = []string{ModelFile, "checkpoint/" + ModelFile, "checkpoint/" + optimizerFile, "checkpoint/" + memoryFile}

// sameRunFiles fails unless the runs in a and b have the same bytes in
// every file of runFiles (a file absent from both is fine: methods without
// memory) and the same losses and kNN accuracies in metrics.jsonl.
func sameRunFiles(t *testing.T, a, b string) {
	t.Helper()
	for _, f := range runFiles {
		x, errA := os.ReadFile(filepath.Join(a, f))
		y, errB := os.ReadFile(filepath.Join(b, f))
		if errors.Is(errA, os.ErrNotExist) && errors.Is(errB, os.ErrNotExist) {
			continue
		}
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v, %v", f, errA, errB)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and %s", f, a, b)
		}
	}
	ma, err := ReadMetrics(a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := ReadMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ma) != len(mb) {
		t.Fatalf("%d vs %d metric lines", len(ma), len(mb))
	}
	for i := range ma {
		if ma[i].Loss != mb[i].Loss || (ma[i].KNNTop1 == nil) != (mb[i].KNNTop1 == nil) ||
			(ma[i].KNNTop1 != nil && *ma[i].KNNTop1 != *mb[i].KNNTop1) {
			t.Errorf("metric %d: %+v vs %+v", i, ma[i], mb[i])
		}
	}
}

// TestTrainOnDevice trains a few steps of several methods on the CPU and
// on "hostlessfused", whose buffers have no host storage (any host read of
// a model tensor, a batch on the device or an optimizer moment panics),
// with a kNN measurement and checkpoints along the way. The device run
// must write the CPU run's files byte for byte: the same kernels compute
// both, and the checkpoints are copied to the host.
func TestTrainOnDevice(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		embedded     bool // the embedded default data (32x32) and a ResNet-18 of width 8
	}{
		{"dmoco", "dmoco", false},
		{"simclr", "simclr", false},
		{"byol", "byol", false},
		{"dmoco/default-data-w8", "dmoco", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(t, tc.method)
			c.Steps, c.KNNEvery = 3, 3
			options := tinyOptions
			if tc.embedded {
				c.Arch, c.Batch, c.Steps, c.KNNEvery, c.BNSplits = "resnet18-w8", 8, 2, 0, 1
				options = func(dir string) Options { return Options{Out: dir} }
			}
			cpu, dev := t.TempDir(), t.TempDir()
			if _, err := Train(context.Background(), c, options(cpu)); err != nil {
				t.Fatal(err)
			}
			opts := options(dev)
			opts.Device = hostless.FusedName
			res, err := Train(context.Background(), c, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Steps != c.Steps || (res.KNNTop1 != nil) != (c.KNNEvery > 0) {
				t.Errorf("result %+v", res)
			}
			sameRunFiles(t, cpu, dev)
		})
	}
}

// TestResumeAcrossDevices interrupts a run after 2 of 4 steps on one
// device and resumes it on the other: checkpoints written from the device
// load onto the CPU and the other way round, and the final files are those
// of an uninterrupted CPU run.
func TestResumeAcrossDevices(t *testing.T) {
	c := tinyConfig(t, "dmoco")
	c.Steps = 4
	straight := t.TempDir()
	if _, err := Train(context.Background(), c, tinyOptions(straight)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, first, then string }{
		{"hostlessfused-then-cpu", hostless.FusedName, "cpu"},
		{"cpu-then-hostlessfused", "cpu", hostless.FusedName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := tinyOptions(dir)
			opts.Device = tc.first
			opts.AfterStep = func(s int) {
				if s == 2 {
					cancel()
				}
			}
			if _, err := Train(ctx, c, opts); !errors.Is(err, ErrInterrupted) {
				t.Fatalf("interrupted run: %v", err)
			}
			opts = tinyOptions(dir)
			opts.Device, opts.Resume = tc.then, true
			if _, err := Train(context.Background(), c, opts); err != nil {
				t.Fatal(err)
			}
			sameRunFiles(t, straight, dir)
		})
	}
}

// TestTrainOnCoreOnlyDevice checks that a backend without the layers'
// capabilities is refused before training, with one line naming the device
// and every missing capability, not a panic in the first convolution; and
// that an unknown device is an error naming the registered ones.
func TestTrainOnCoreOnlyDevice(t *testing.T) {
	for _, tc := range []struct {
		device string
		want   []string
	}{
		{hostless.Name, []string{"--device hostless:", "cannot run resnet18-w4 (simclr)",
			"no convolution (tensor.ConvBackend), batch norm (tensor.BatchNormBackend), pooling (tensor.PoolBackend)", "use --device cpu"}},
		{"nosuchdevice", []string{"--device nosuchdevice:", "no backend", hostless.FusedName}},
	} {
		t.Run(tc.device, func(t *testing.T) {
			dir := t.TempDir()
			opts := tinyOptions(dir)
			opts.Device = tc.device
			_, err := Train(context.Background(), tinyConfig(t, "simclr"), opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if ce := (*CapabilityError)(nil); errors.As(err, &ce) != (tc.device == hostless.Name) {
				t.Errorf("error %q: a *CapabilityError %v, expected %v", err, ce != nil, tc.device == hostless.Name)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error of several lines: %q", err)
			}
			if _, err := LoadRunOn(dir, -1, tc.device); err == nil {
				t.Errorf("LoadRunOn %s: no error", tc.device)
			}
		})
	}
}

// TestLoadRunOnDevice loads a CPU run onto "hostlessfused" and embeds
// images with both layers: the features are the CPU's bit for bit.
func TestLoadRunOnDevice(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "simclr")
	c.Steps = 2
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	cpu, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := LoadRunOn(dir, -1, hostless.FusedName)
	if err != nil {
		t.Fatal(err)
	}
	if dev.Device != hostless.FusedDevice || cpu.Device != tensor.CPU {
		t.Fatalf("devices %s and %s", cpu.Device, dev.Device)
	}
	for _, p := range dev.Method.Parts() {
		for _, e := range nn.StateDictOf(p.Module) {
			if e.Tensor.Device() != hostless.FusedDevice {
				t.Fatalf("%s.%s on %s", p.Prefix, e.Name, e.Tensor.Device())
			}
		}
	}
	x := tensor.RandN(rand.New(rand.NewPCG(1, 1)), 5, 3, 8, 8)
	for _, layer := range []string{"backbone", "projector"} {
		want, err := cpu.Embed(x, layer, 2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dev.Embed(x, layer, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got.Device() != tensor.CPU || !hostless.SameBits(got.Data(), want.Data()) {
			t.Errorf("%s: features on %s differ from the CPU's", layer, got.Device())
		}
	}
}
