package loss

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/tensor"
)

// fixtureCase is one entry of testdata/losses.json (gen_fixtures.py).
type fixtureCase struct {
	Name   string
	Kind   string
	Params struct {
		Labels         []int
		Tau            float64
		Eps            float64
		BatchNegatives bool    `json:"batch_negatives"`
		Lambda         float64 `json:"lambda"`
	}
	Inputs map[string]struct {
		Shape []int
		Data  []float32
	}
	Loss  float64
	Grads map[string][]float64
}

func loadCases(t testing.TB) []fixtureCase {
	t.Helper()
	b, err := os.ReadFile("testdata/losses.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []fixtureCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// run evaluates a fixture case's loss on vars (keyed like the fixture inputs).
func (c *fixtureCase) run(tp *autograd.Tape, v map[string]*autograd.Var) *autograd.Var {
	opt := ContrastiveOptions{Tau: c.Params.Tau, Eps: c.Params.Eps, BatchNegatives: c.Params.BatchNegatives}
	switch c.Kind {
	case "cross_entropy":
		return CrossEntropy(tp, v["logits"], c.Params.Labels)
	case "infonce":
		return InfoNCE(tp, v["q"], v["k"], v["negatives"], opt)
	case "ntxent":
		return NTXent(tp, v["z1"], v["z2"], v["negatives"], opt)
	case "byol":
		return BYOL(tp, v["p"], v["z"])
	case "barlow":
		return BarlowTwins(tp, v["z1"], v["z2"], c.Params.Lambda)
	}
	panic("unknown kind " + c.Kind)
}

// names returns the fixture's input names in a fixed order.
func (c *fixtureCase) names() []string {
	var out []string
	for _, n := range []string{"logits", "q", "k", "z1", "z2", "p", "z", "negatives"} {
		if _, ok := c.Inputs[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// TestTorchParity compares values and input gradients with PyTorch: the
// loss within 1e-4 relative, each gradient element within 1e-4 of the
// largest gradient element of that input.
func TestTorchParity(t *testing.T) {
	cases := loadCases(t)
	if len(cases) < 18 {
		t.Fatalf("fixture has %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			vars := map[string]*autograd.Var{}
			for n, in := range c.Inputs {
				_, isGrad := c.Grads[n]
				vars[n] = autograd.NewVar(tensor.FromSlice(in.Data, in.Shape...), isGrad)
			}
			tp := autograd.NewTape()
			out := c.run(tp, vars)
			if out.Value.NDim() != 0 {
				t.Errorf("loss has shape %v, expected a scalar", out.Shape())
			}
			got := float64(out.Value.Item())
			if math.Abs(got-c.Loss) > 1e-4*math.Abs(c.Loss) {
				t.Errorf("loss %v, PyTorch %v (rel. error %.2g)", got, c.Loss, math.Abs(got-c.Loss)/math.Abs(c.Loss))
			}
			tp.Backward(out)
			if nv := vars["negatives"]; nv != nil && nv.Grad != nil {
				t.Error("negatives received a gradient")
			}
			for n, want := range c.Grads {
				g := vars[n].Grad
				if g == nil {
					t.Fatalf("no gradient for %s", n)
				}
				gd := g.Data()
				var scale, worst float64
				for _, w := range want {
					scale = math.Max(scale, math.Abs(w))
				}
				for j, w := range want {
					worst = math.Max(worst, math.Abs(float64(gd[j])-w))
				}
				if worst > 1e-4*scale {
					t.Errorf("gradient of %s differs from PyTorch by %.3g (largest element %.3g)", n, worst, scale)
				}
				t.Logf("loss rel. error %.2g, gradient of %s: error / largest element %.2g", math.Abs(got-c.Loss)/math.Abs(c.Loss), n, worst/scale)
			}
		})
	}
}

// TestGradcheck checks every loss against float64 central differences.
func TestGradcheck(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			names := c.names()
			inputs := make([]*tensor.Tensor, len(names))
			var consts []int
			for i, n := range names {
				in := c.Inputs[n]
				inputs[i] = tensor.FromSlice(in.Data, in.Shape...)
				if _, ok := c.Grads[n]; !ok {
					consts = append(consts, i)
				}
			}
			f := func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
				v := map[string]*autograd.Var{}
				for i, n := range names {
					v[n] = in[i]
				}
				return c.run(tp, v)
			}
			gradcheck.Assert(t, f, inputs, gradcheck.Options{Const: consts, Step: 1e-2, Atol: 1e-3, Rtol: 1e-2})
		})
	}
}

// TestEpsOneIsCrossEntropy checks the documented identity: InfoNCE with
// ε = 1 is the cross-entropy of [q·k/τ | q·nᵀ/τ] with target 0.
func TestEpsOneIsCrossEntropy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	b, d, n := 4, 6, 5
	q, k, neg := randUnit(r, b, d), randUnit(r, b, d), randUnit(r, n, d)
	tau := 0.5
	logits := tensor.New(b, n+1)
	for i := range b {
		logits.Set(dot(q, k, i, i, d)/float32(tau), i, 0)
		for j := range n {
			logits.Set(dot(q, neg, i, j, d)/float32(tau), i, j+1)
		}
	}
	want := CrossEntropy(nil, autograd.Const(logits), make([]int, b)).Value.Item()
	got := InfoNCE(nil, autograd.Const(tensor.FromSlice(q, b, d)), autograd.Const(tensor.FromSlice(k, b, d)),
		autograd.Const(tensor.FromSlice(neg, n, d)), ContrastiveOptions{Tau: tau, Eps: 1}).Value.Item()
	if math.Abs(float64(got-want)) > 1e-6 {
		t.Errorf("InfoNCE(eps=1) = %v, cross-entropy = %v", got, want)
	}
}

// TestNTXentIsSymmetricInfoNCE: NT-Xent without batch negatives is the
// mean of InfoNCE in both directions with the same memory negatives.
func TestNTXentIsSymmetricInfoNCE(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	b, d, n := 3, 4, 6
	z1 := autograd.Const(tensor.FromSlice(randUnit(r, b, d), b, d))
	z2 := autograd.Const(tensor.FromSlice(randUnit(r, b, d), b, d))
	neg := autograd.Const(tensor.FromSlice(randUnit(r, n, d), n, d))
	for _, eps := range []float64{0, 1} {
		opt := ContrastiveOptions{Tau: 0.3, Eps: eps}
		got := NTXent(nil, z1, z2, neg, opt).Value.Item()
		want := (InfoNCE(nil, z1, z2, neg, opt).Value.Item() + InfoNCE(nil, z2, z1, neg, opt).Value.Item()) / 2
		if math.Abs(float64(got-want)) > 1e-6 {
			t.Errorf("eps %v: NTXent = %v, symmetric InfoNCE = %v", eps, got, want)
		}
	}
}

func TestStability(t *testing.T) {
	// Huge logits must not overflow.
	x := autograd.Const(tensor.FromSlice([]float32{1e4, -1e4, 0, 3e4}, 2, 2))
	if v := CrossEntropy(nil, x, []int{0, 0}).Value.Item(); math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.Abs(float64(v)-1.5e4) > 1 {
		t.Errorf("cross-entropy of huge logits = %v, want 15000", v)
	}
	// Identical unit vectors at a tiny temperature: every logit is 1000.
	q := autograd.Const(tensor.FromSlice([]float32{1, 0, 1, 0}, 2, 2))
	v := NTXent(nil, q, q, nil, ContrastiveOptions{Tau: 1e-3, Eps: 1, BatchNegatives: true}).Value.Item()
	if math.IsNaN(float64(v)) || math.Abs(float64(v)-math.Log(3)) > 1e-6 {
		t.Errorf("NTXent at tau 1e-3 = %v, want log 3", v)
	}
	// BYOL of identical directions is 0, of opposite ones 4.
	p := autograd.Const(tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2))
	z := autograd.Const(tensor.FromSlice([]float32{2, 4, -3, -4}, 2, 2))
	if v := BYOL(nil, p, z).Value.Item(); math.Abs(float64(v)-2) > 1e-6 {
		t.Errorf("BYOL = %v, want (0 + 4)/2", v)
	}
}

func TestPanics(t *testing.T) {
	m := func(r, c int) *autograd.Var { return autograd.Const(tensor.Ones(r, c)) }
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"labels", func() { CrossEntropy(nil, m(2, 3), []int{0}) }, "1 labels for 2 rows"},
		{"label range", func() { CrossEntropy(nil, m(2, 3), []int{0, 3}) }, "out of range"},
		{"1-d", func() { CrossEntropy(nil, autograd.Const(tensor.Ones(3)), []int{0}) }, "expected 2-d"},
		{"tau", func() { InfoNCE(nil, m(2, 3), m(2, 3), nil, ContrastiveOptions{Eps: 1}) }, "temperature"},
		{"eps", func() { InfoNCE(nil, m(2, 3), m(2, 3), nil, ContrastiveOptions{Tau: 1, Eps: 2}) }, "eps 2"},
		{"no negatives", func() { InfoNCE(nil, m(2, 3), m(2, 3), nil, ContrastiveOptions{Tau: 1}) }, "at least one negative"},
		{"shapes", func() { InfoNCE(nil, m(2, 3), m(3, 3), nil, ContrastiveOptions{Tau: 1, Eps: 1}) }, "k has shape"},
		{"negatives", func() { NTXent(nil, m(2, 3), m(2, 3), m(4, 2), ContrastiveOptions{Tau: 1, Eps: 1}) }, "negatives have shape"},
		{"byol", func() { BYOL(nil, m(2, 3), m(2, 4)) }, "z has shape"},
		{"barlow", func() { BarlowTwins(nil, m(2, 3), m(2, 3), -1) }, "lambda"},
		{"nil", func() { BYOL(nil, nil, m(2, 3)) }, "p is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, c.want) {
					t.Errorf("panic %v, want one containing %q", r, c.want)
				}
			}()
			c.f()
		})
	}
}

func randUnit(r *rand.Rand, n, d int) []float32 {
	out := make([]float32, n*d)
	for i := range n {
		var s float64
		for j := range d {
			v := r.NormFloat64()
			out[i*d+j] = float32(v)
			s += v * v
		}
		for j := range d {
			out[i*d+j] /= float32(math.Sqrt(s))
		}
	}
	return out
}

func dot(a, b []float32, i, j, d int) float32 {
	var s float32
	for k := range d {
		s += a[i*d+k] * b[j*d+k]
	}
	return s
}

// BenchmarkContrastive times the paper's CIFAR-10 D-SimCLR shape: batch
// 256, 256-d embeddings, 256 memory negatives, forward and backward.
func BenchmarkContrastive(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const bs, d, n = 256, 256, 256
	z1 := autograd.NewVar(tensor.FromSlice(randUnit(r, bs, d), bs, d), true)
	z2 := autograd.NewVar(tensor.FromSlice(randUnit(r, bs, d), bs, d), true)
	neg := autograd.Const(tensor.FromSlice(randUnit(r, n, d), n, d))
	opt := ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}
	b.Run("NTXent", func(b *testing.B) {
		for b.Loop() {
			tp := autograd.NewTape()
			tp.Backward(NTXent(tp, z1, z2, neg, opt))
		}
	})
	b.Run("InfoNCE", func(b *testing.B) {
		for b.Loop() {
			tp := autograd.NewTape()
			tp.Backward(InfoNCE(tp, z1, z2, neg, opt))
		}
	})
	b.Run("BarlowTwins", func(b *testing.B) {
		for b.Loop() {
			tp := autograd.NewTape()
			tp.Backward(BarlowTwins(tp, z1, z2, DefaultBarlowLambda))
		}
	})
}
