package nn_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/internal/fixture"
)

// Parity tolerances: max|got-want| <= rtol*max|want| + atol per tensor.
const (
	parityRtol = 1e-4
	parityAtol = 1e-6
)

// fixtureModule builds the Go layer described by a layers.json case.
func fixtureModule(t *testing.T, c fixture.Case) nn.Module {
	r := rand.New(rand.NewPCG(0, 0))
	switch c.Kind() {
	case "linear":
		return nn.NewLinear(c.Int("in"), c.Int("out"), c.Bool("bias"), r)
	case "conv2d":
		return nn.NewConv2d(c.Int("in"), c.Int("out"), c.Int("kernel"), c.Int("stride"), c.Int("padding"), c.Bool("bias"), r)
	case "batchnorm":
		bn := nn.NewBatchNorm(c.Int("channels"))
		bn.Splits = max(1, c.Int("splits"))
		return bn
	case "relu":
		return nn.NewReLU()
	case "maxpool":
		return nn.NewMaxPool2d(c.Int("kernel"), c.Int("stride"), c.Int("padding"))
	case "avgpool":
		return nn.NewAdaptiveAvgPool2d(c.Int("out_h"), c.Int("out_w"))
	case "flatten":
		return nn.NewFlatten()
	case "mlp":
		return nn.NewSequential(nn.NewLinear(6, 8, true, r), nn.NewBatchNorm1d(8), nn.NewReLU(), nn.NewLinear(8, 3, true, r))
	}
	t.Fatalf("case %s: unknown kind %q", c.Name(), c.Kind())
	return nil
}

// CheckParity runs the forward and backward pass of case c on m and
// compares output, gradients and updated buffers with the fixture.
func checkParity(t *testing.T, g *fixture.Group, c fixture.Case, m nn.Module) {
	t.Helper()
	name := c.Name()
	must := func(k string) *autograd.Var {
		v, err := g.Tensor(name + "/" + k)
		if err != nil {
			t.Fatal(err)
		}
		return autograd.NewVar(v, false)
	}
	sd, err := g.State(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := nn.LoadStateDict(m, sd, true); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	nn.Train(m, c.Training())
	x := must("x")
	x.RequiresGrad = true
	tp := autograd.NewTape()
	out := m.Forward(tp, x)
	if msg := fixture.Compare(out.Value, must("out").Value, parityRtol, parityAtol); msg != "" {
		t.Errorf("%s: output: %s", name, msg)
	}
	tp.BackwardWith(out, must("gout").Value)
	if msg := fixture.Compare(x.Grad, must("grad.x").Value, parityRtol, parityAtol); msg != "" {
		t.Errorf("%s: grad of input: %s", name, msg)
	}
	checked := 0
	for _, p := range nn.NamedParameters(m) {
		k := "grad." + p.Name
		if !g.Has(name + "/" + k) {
			continue
		}
		checked++
		if p.Var.Grad == nil {
			t.Errorf("%s: %s: no gradient", name, p.Name)
			continue
		}
		if msg := fixture.Compare(p.Var.Grad, must(k).Value, parityRtol, parityAtol); msg != "" {
			t.Errorf("%s: grad of %s: %s", name, p.Name, msg)
		}
	}
	if want := len(g.Names(name + "/grad.")); checked != want-1 {
		t.Errorf("%s: checked %d parameter gradients, fixture has %d", name, checked, want-1)
	}
	if c.Training() {
		for _, b := range nn.NamedBuffers(m) {
			want := must("after." + b.Name).Value
			if msg := fixture.Compare(b.Buffer.Tensor, want, parityRtol, parityAtol); msg != "" {
				t.Errorf("%s: buffer %s after the pass: %s", name, b.Name, msg)
			}
		}
	}
}

func TestLayersParity(t *testing.T) {
	g, err := fixture.Load("testdata", "layers")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, c := range g.Cases {
		kinds[c.Kind()] = true
		t.Run(c.Name(), func(t *testing.T) { checkParity(t, g, c, fixtureModule(t, c)) })
	}
	for _, k := range strings.Fields("linear conv2d batchnorm relu maxpool avgpool flatten mlp") {
		if !kinds[k] {
			t.Errorf("no fixture for %s", k)
		}
	}
}
