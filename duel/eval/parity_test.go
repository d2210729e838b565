package eval

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
)

// linearFixture is testdata/linear_probe.json, written by gen_fixtures.py
// with PyTorch 1.13.
type linearFixture struct {
	N, D, Classes, Epochs, Batch int
	LR, WD                       float64
	X, XTest                     []float32 `json:"-"`
	XRaw                         []float64 `json:"x"`
	XTestRaw                     []float64 `json:"x_test"`
	Y                            []int32   `json:"y"`
	YTest                        []int32   `json:"y_test"`
	Weight0, Bias0               []float64
	Perms                        [][]int
	Weight, Bias                 []float64
	EpochLoss                    []float64 `json:"epoch_loss"`
	TestLogits                   []float64 `json:"test_logits"`
	Top1                         float64
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestLinearProbeMatchesPyTorch runs the probe's training loop from the
// fixture's initial weights over its row orders and compares the weights,
// the epoch losses and the test logits with PyTorch's.
func TestLinearProbeMatchesPyTorch(t *testing.T) {
	b, err := os.ReadFile("testdata/linear_probe.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx linearFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	train, err := NewFeatures(f32(fx.XRaw), fx.Y, fx.D)
	if err != nil {
		t.Fatal(err)
	}
	test, err := NewFeatures(f32(fx.XTestRaw), fx.YTest, fx.D)
	if err != nil {
		t.Fatal(err)
	}
	lin := nn.NewLinear(fx.D, fx.Classes, true, rand.New(rand.NewPCG(1, 1)))
	copy(lin.Weight.Value.Data(), f32(fx.Weight0))
	copy(lin.Bias.Value.Data(), f32(fx.Bias0))
	epoch := 0
	var losses []float64
	cfg := LinearConfig{Epochs: fx.Epochs, Batch: fx.Batch, LR: fx.LR, WeightDecay: fx.WD,
		Progress: func(_ int, l float64) { losses = append(losses, l) }}
	if _, err := fitLinear(context.Background(), lin, train, cfg, func() []int { epoch++; return fx.Perms[epoch-1] }); err != nil {
		t.Fatal(err)
	}
	near := func(what string, got []float32, want []float64, tol float64) {
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > tol*(1+math.Abs(want[i])) {
				t.Errorf("%s[%d] = %v, PyTorch %v", what, i, got[i], want[i])
			}
		}
	}
	near("weight", lin.Weight.Value.Data(), fx.Weight, 1e-5)
	near("bias", lin.Bias.Value.Data(), fx.Bias, 1e-5)
	near("epoch loss", f32(losses), fx.EpochLoss, 1e-5)
	logits := lin.Forward(nil, constOf(test)).Value.Contiguous().Data()
	near("test logits", logits, fx.TestLogits, 1e-5)
	if res, err := scoreLinear(lin, test, train.N); err != nil || math.Abs(res.Top1-fx.Top1) > 1e-6 {
		t.Errorf("top-1 %v (%v), PyTorch %v", res.Top1, err, fx.Top1)
	}
}

func constOf(f *Features) *autograd.Var {
	return autograd.Const(tensor.FromSlice(f.X, f.N, f.D))
}
