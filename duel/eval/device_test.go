package eval

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// convEncoder returns an Encoder with a convolution, BatchNorm (in eval
// mode, with non-trivial running statistics) and global pooling, placed
// on dev: each batch is copied in and its features are left on dev.
func convEncoder(t *testing.T, dev tensor.Device) Encoder {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	bn := nn.NewBatchNorm2d(5)
	bn.RunningMean.Tensor.Fill(0.1)
	m := nn.NewSequential(nn.NewConv2d(3, 5, 3, 1, 1, true, r), bn, nn.NewReLU(),
		nn.NewAdaptiveAvgPool2d(1, 1), nn.NewFlatten())
	nn.Train(m, false)
	if err := nn.To(m, dev); err != nil {
		t.Fatal(err)
	}
	return func(x *tensor.Tensor) (*tensor.Tensor, error) {
		x, err := x.To(dev)
		if err != nil {
			return nil, err
		}
		return m.Forward(nil, autograd.Const(x)).Value, nil
	}
}

// TestProtocolsOnDevice runs feature extraction, kNN (both votes) and a
// short linear probe on the CPU and on "hostlessfused" (no host storage:
// any host read of a device tensor panics). The features, the kNN
// predictions and accuracies, and the probe's loss and accuracy are the
// CPU's bit for bit: the same kernels compute both.
func TestProtocolsOnDevice(t *testing.T) {
	ds := tinyDataset(24)
	opt := ExtractOptions{Batch: 5, Mean: []float32{0.05, 0.05, 0.05}, Std: []float32{0.02, 0.03, 0.04}}
	want, err := Extract(ds, convEncoder(t, tensor.CPU), opt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Extract(ds, convEncoder(t, hostless.FusedDevice), opt)
	if err != nil {
		t.Fatal(err)
	}
	if !hostless.SameBits(got.X, want.X) || got.N != want.N || got.D != want.D {
		t.Fatalf("features on %s differ from the CPU's", hostless.FusedDevice)
	}

	r := rand.New(rand.NewPCG(9, 10))
	all := clusters(r, 700, 12, 5, 3)
	train, test := all.Subset(seq(0, 400)), all.Subset(seq(400, 700)) // 300 test rows: two chunks
	for _, vote := range []Vote{Weighted, Majority} {
		cfg := DefaultKNNConfig()
		cfg.Vote, cfg.K = vote, 20
		wantRes, err := KNN(train, test, cfg)
		if err != nil {
			t.Fatal(err)
		}
		wantPred, _ := KNNPredict(train, test, cfg)
		cfg.Device = hostless.FusedDevice
		gotRes, err := KNN(train, test, cfg)
		if err != nil {
			t.Fatal(err)
		}
		gotPred, _ := KNNPredict(train, test, cfg)
		if gotRes != wantRes {
			t.Errorf("kNN %s on %s: %+v, CPU %+v", vote, cfg.Device, gotRes, wantRes)
		}
		for i := range wantPred {
			if gotPred[i] != wantPred[i] {
				t.Fatalf("kNN %s: row %d predicted %d on the device, %d on the CPU", vote, i, gotPred[i], wantPred[i])
			}
		}
	}

	lc := DefaultLinearConfig()
	lc.Epochs, lc.Batch, lc.LR, lc.Seed = 3, 64, 1e-2, 5
	wantLin, err := LinearProbe(train, test, lc)
	if err != nil {
		t.Fatal(err)
	}
	lc.Device = hostless.FusedDevice
	gotLin, err := LinearProbe(train, test, lc)
	if err != nil {
		t.Fatal(err)
	}
	if gotLin != wantLin {
		t.Errorf("linear probe on %s: %+v, CPU %+v", lc.Device, gotLin, wantLin)
	}
	// On "hostless" the Linear layer and the cross-entropy are composed of
	// core operations, which round differently: a few float32 roundings
	// of O(1) values per step, so the loss agrees to 1e-5 relative.
	lc.Device = hostless.Device
	core, err := LinearProbe(train, test, lc)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(core.TrainLoss-wantLin.TrainLoss) / (1 + math.Abs(wantLin.TrainLoss)); d > 1e-5 || core.Top1 != wantLin.Top1 {
		t.Errorf("linear probe on %s: %+v, CPU %+v (loss differs by %g)", lc.Device, core, wantLin, d)
	}
}
