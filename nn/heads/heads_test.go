package heads

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/safetensors"
	"github.com/duel-ssl/duel/tensor"
)

// headFixture is one entry of testdata/heads.json (gen_fixtures.py).
type headFixture struct {
	Spec struct {
		Dims     []int
		HiddenBN bool `json:"hidden_bn"`
		LastBN   bool `json:"last_bn"`
		Bias     *bool
	}
	Names   []string
	X, W, Y []float32
	DX      []float64
	Grads   map[string][]float64
	Buffers map[string][]float64
}

func (f headFixture) spec() Spec {
	return Spec{Dims: f.Spec.Dims, HiddenBN: f.Spec.HiddenBN, LastBN: f.Spec.LastBN, NoBias: f.Spec.Bias != nil && !*f.Spec.Bias}
}

// loadTorchState reads a PyTorch state_dict written by gen_fixtures.py.
func loadTorchState(t *testing.T, path string) nn.StateDict {
	t.Helper()
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	sd, err := f.StateDict()
	if err != nil {
		t.Fatal(err)
	}
	return sd
}

func closeTo(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale, worst float64
	for i := range want {
		scale = math.Max(scale, math.Abs(want[i]))
		worst = math.Max(worst, math.Abs(float64(got[i])-want[i]))
	}
	// The absolute floor covers gradients that are zero in exact arithmetic
	// (a bias followed by BatchNorm), which both sides compute as noise.
	if worst > tol*scale+1e-5 {
		t.Errorf("%s differs from PyTorch by %.3g (largest element %.3g)", what, worst, scale)
	}
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TestTorchParity loads each head's PyTorch weights by name, runs one
// training-mode forward and backward, and compares the output, the input
// and parameter gradients and the updated BatchNorm running statistics.
func TestTorchParity(t *testing.T) {
	b, err := os.ReadFile("testdata/heads.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx map[string]headFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	for name, f := range fx {
		t.Run(name, func(t *testing.T) {
			m, err := NewMLP(f.spec(), rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			sd := nn.StateDictOf(m)
			if got := sd.Names(); !reflect.DeepEqual(got, f.Names) {
				t.Fatalf("state dict names %v, PyTorch %v", got, f.Names)
			}
			if err := nn.LoadStateDict(m, loadTorchState(t, "testdata/"+name+".safetensors"), true); err != nil {
				t.Fatal(err)
			}
			in, out := f.Spec.Dims[0], m.OutDim()
			bs := len(f.X) / in
			x := autograd.NewVar(tensor.FromSlice(f.X, bs, in), true)
			tp := autograd.NewTape()
			y := m.Forward(tp, x)
			if !reflect.DeepEqual(y.Shape(), []int{bs, out}) {
				t.Fatalf("output shape %v, want [%d %d]", y.Shape(), bs, out)
			}
			closeTo(t, "output", y.Value.Contiguous().Data(), f64(f.Y), 1e-4)
			tp.BackwardWith(y, tensor.FromSlice(f.W, bs, out))
			closeTo(t, "input gradient", x.Grad.Data(), f.DX, 1e-4)
			for _, p := range nn.NamedParameters(m) {
				closeTo(t, "gradient of "+p.Name, p.Var.Grad.Data(), f.Grads[p.Name], 1e-4)
			}
			for _, e := range nn.StateDictOf(m) {
				if want, ok := f.Buffers[e.Name]; ok {
					closeTo(t, "buffer "+e.Name, e.Tensor.Contiguous().Data(), want, 1e-4)
				}
			}
		})
	}
}

func TestPresets(t *testing.T) {
	cases := []struct {
		spec  Spec
		str   string
		names []string
	}{
		{Linear(512, 256), "Linear(512,256)", []string{"0.weight", "0.bias"}},
		{MoCoV2(2048, 2048, 128), "Linear(2048,2048)-ReLU-Linear(2048,128)", []string{"0.weight", "0.bias", "2.weight", "2.bias"}},
		{SimCLR(2048, 2048, 512), "Linear(2048,2048)-ReLU-Linear(2048,512)", nil},
		{BYOLProjector(2048, 4096, 256, true), "Linear(2048,4096)-BN-ReLU-Linear(4096,256)",
			[]string{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked", "3.weight", "3.bias"}},
		{BYOLPredictor(256, 4096, true), "Linear(256,4096)-BN-ReLU-Linear(4096,256)", nil},
		{BYOLProjector(2048, 2048, 256, false), "Linear(2048,2048)-ReLU-Linear(2048,256)", nil},
		{Barlow(2048, 512, 512), "Linear(2048,512)-BN-ReLU-Linear(512,512)-BN-ReLU-Linear(512,512) (no bias)",
			[]string{"0.weight", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked",
				"3.weight", "4.weight", "4.bias", "4.running_mean", "4.running_var", "4.num_batches_tracked", "6.weight"}},
		{Spec{Dims: []int{4, 3, 2}, HiddenBN: true, LastBN: true}, "Linear(4,3)-BN-ReLU-Linear(3,2)-BN", nil},
	}
	for _, c := range cases {
		if got := c.spec.String(); got != c.str {
			t.Errorf("String() = %q, want %q", got, c.str)
		}
		m, err := NewMLP(c.spec, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if c.names != nil {
			if got := nn.StateDictOf(m).Names(); !reflect.DeepEqual(got, c.names) {
				t.Errorf("%s: names %v, want %v", c.str, got, c.names)
			}
		}
	}
}

func TestSpecErrors(t *testing.T) {
	for _, s := range []Spec{{}, {Dims: []int{3}}, {Dims: []int{3, 0}}, {Dims: []int{-1, 2}}} {
		if _, err := NewMLP(s, rand.New(rand.NewPCG(1, 2))); err == nil || !strings.Contains(err.Error(), "heads: dims") {
			t.Errorf("NewMLP(%v): error %v", s.Dims, err)
		}
	}
}

func BenchmarkBYOLProjector(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	m, _ := NewMLP(BYOLProjector(512, 2048, 256, true), r)
	x := autograd.NewVar(tensor.RandN(r, 256, 512), true)
	for b.Loop() {
		tp := autograd.NewTape()
		y := m.Forward(tp, x)
		tp.BackwardWith(y, tensor.Ones(y.Shape()...))
	}
}
