package autograd_test

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// torchCase is one expression evaluated by PyTorch in float64
// (testdata/gen_torch.py).
type torchCase struct {
	Name   string
	Inputs []struct {
		Shape []int
		Data  []float64
	}
	Const []int
	Value float64
	Grads [][]float64
}

// torchExprs are the Go versions of the expressions in gen_torch.py.
var torchExprs = map[string]func(tp *ag.Tape, in []*ag.Var) *ag.Var{
	"softplus": func(tp *ag.Tape, v []*ag.Var) *ag.Var {
		return ag.SumAll(tp, ag.Mul(tp, ag.Softplus(tp, v[0]), v[1]))
	},
	"mlp_ce": func(tp *ag.Tape, v []*ag.Var) *ag.Var {
		h := ag.ReLU(tp, ag.Add(tp, ag.MatMul(tp, v[0], v[1]), v[2]))
		logits := ag.Add(tp, ag.MatMul(tp, h, v[3]), v[4])
		return ag.Neg(tp, ag.MeanAll(tp, ag.Sum(tp, ag.Mul(tp, ag.LogSoftmax(tp, logits, 1), v[5]), 1, false)))
	},
	"contrastive": func(tp *ag.Tape, v []*ag.Var) *ag.Var {
		qn, kn := ag.L2Normalize(tp, v[0], 1), ag.L2Normalize(tp, v[1], 1)
		lp := ag.LogSoftmax(tp, ag.MulScalar(tp, ag.MatMul(tp, qn, ag.Transpose(tp, kn, 0, 1)), 1/0.2), -1)
		eye := ag.Const(like(tensor.Eye(v[0].Value.Dim(0)), v[0].Value))
		return ag.Neg(tp, ag.MeanAll(tp, ag.Sum(tp, ag.Mul(tp, lp, eye), 1, false)))
	},
	"broadcast_mix": func(tp *ag.Tape, v []*ag.Var) *ag.Var {
		a, b, c := v[0], v[1], v[2]
		y := ag.Div(tp, ag.Tanh(tp, ag.Mul(tp, a, b)), ag.AddScalar(tp, ag.Sigmoid(tp, c), 1))
		y = ag.Sub(tp, y, ag.Div(tp, a, ag.AddScalar(tp, ag.Mul(tp, b, b), 1)))
		y = ag.Add(tp, y, ag.Mul(tp, ag.Log(tp, ag.Sqrt(tp, ag.AddScalar(tp, ag.Abs(tp, a), 1))), ag.Exp(tp, c)))
		y = ag.Sub(tp, ag.PowScalar(tp, y, 3), ag.Square(tp, y))
		return ag.Max(tp, ag.Mean(tp, ag.Sum(tp, y, 2, false), 0, false), 0, false)
	},
	"axis_ops": func(tp *ag.Tape, v []*ag.Var) *ag.Var {
		x, w := v[0], v[1]
		s := ag.Mul(tp, ag.Softmax(tp, x, 0), w)
		l := ag.LogSoftmax(tp, ag.MulScalar(tp, x, 3), 1)
		n := ag.L2Normalize(tp, x, 0)
		return ag.SumAll(tp, ag.Sum(tp, ag.Add(tp, s, ag.Mul(tp, l, n)), 0, true))
	},
	"cross_entropy": func(tp *ag.Tape, v []*ag.Var) *ag.Var {
		return ag.Add(tp, ag.CrossEntropy(tp, ag.MulScalar(tp, v[0], 2), []int{1, 0, 4}),
			ag.CrossEntropy(tp, ag.Transpose(tp, v[0], 0, 1), []int{2, 2, 0, 1, 2}))
	},
	"batch_ops": func(tp *ag.Tape, v []*ag.Var) *ag.Var {
		a, b, c := v[0], v[1], v[2]
		t := ag.Permute(tp, ag.BatchMatMul(tp, a, b), 0, 2, 1)
		cat := ag.Concat(tp, 1, t, c, ag.Slice(tp, t, 1, 1, 3))
		m := ag.SumAll(tp, ag.Max(tp, cat, 1, false))
		s := ag.MeanAll(tp, ag.MulScalar(tp, ag.Slice(tp, cat, 1, 2, 7), 0.5))
		r := ag.MeanAll(tp, ag.Sum(tp, ag.Reshape(tp, ag.Transpose(tp, cat, 1, 2), 3, -1), 1, false))
		return ag.Sub(tp, ag.Add(tp, m, s), r)
	},
}

// TestAgainstTorch compares values and gradients of composite expressions
// with PyTorch's (float64 there, float32 here), on the CPU and on both
// host-less devices (the backend's capabilities, and autograd's fallbacks).
func TestAgainstTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch_grads.json")
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct{ Cases []torchCase }
	if err := json.Unmarshal(raw, &fixture); err != nil {
		t.Fatalf("testdata/torch_grads.json: %v", err)
	}
	if len(fixture.Cases) != len(torchExprs) {
		t.Fatalf("fixture has %d cases, %d expressions here", len(fixture.Cases), len(torchExprs))
	}
	for _, dev := range []tensor.Device{tensor.CPU, hostless.Device, hostless.FusedDevice} {
		for _, c := range fixture.Cases {
			t.Run(string(dev)+"/"+c.Name, func(t *testing.T) { checkTorchCase(t, dev, c) })
		}
	}
}

// checkTorchCase evaluates one fixture case on dev and compares its value
// and gradients with PyTorch's.
func checkTorchCase(t *testing.T, dev tensor.Device, c torchCase) {
	f := torchExprs[c.Name]
	if f == nil {
		t.Fatalf("no expression %q", c.Name)
	}
	vars := make([]*ag.Var, len(c.Inputs))
	for i, in := range c.Inputs {
		d := make([]float32, len(in.Data))
		for j, v := range in.Data {
			d[j] = float32(v)
		}
		x, err := tensor.FromSlice(d, in.Shape...).To(dev)
		if err != nil {
			t.Fatal(err)
		}
		vars[i] = ag.NewVar(x, true)
	}
	for _, i := range c.Const {
		vars[i].RequiresGrad = false
	}
	tp := ag.NewTape()
	y := f(tp, vars)
	if got := float64(y.Value.Item()); math.Abs(got-c.Value) > 1e-5*(1+math.Abs(c.Value)) {
		t.Fatalf("value %.8g, torch %.8g", got, c.Value)
	}
	tp.Backward(y)
	for i, want := range c.Grads {
		if want == nil {
			if vars[i].Grad != nil {
				t.Fatalf("input %d: gradient for a constant", i)
			}
			continue
		}
		if vars[i].Grad.Device() != dev {
			t.Fatalf("input %d: gradient on %s, want %s", i, vars[i].Grad.Device(), dev)
		}
		got := hostTensor(t, vars[i].Grad)
		for j := range want {
			if d := math.Abs(float64(got[j]) - want[j]); d > 1e-4+1e-3*math.Abs(want[j]) {
				t.Fatalf("input %d element %d: gradient %.7g, torch %.7g", i, j, got[j], want[j])
			}
		}
	}
}

// like returns the host tensor x on ref's device.
func like(x, ref *tensor.Tensor) *tensor.Tensor {
	y, err := x.To(ref.Device())
	if err != nil {
		panic(err)
	}
	return y
}
