package resnet

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/nn/safetensors"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// toDevice moves the parameters and buffers of m to dev.
func toDevice(t *testing.T, m nn.Module, dev tensor.Device) {
	t.Helper()
	for _, p := range nn.Parameters(m) {
		v, err := p.Value.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		p.Value = v
	}
	for _, b := range nn.NamedBuffers(m) {
		v, err := b.Buffer.Tensor.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		b.Buffer.Tensor = v
	}
}

// randOn returns a tensor of the given shape on dev with standard normal
// elements drawn from r.
func randOn(t *testing.T, r *rand.Rand, dev tensor.Device, shape ...int) *tensor.Tensor {
	t.Helper()
	x := tensor.New(shape...)
	nn.NormalInit(x, 1, r)
	v, err := x.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// deviceRun is what one training step of a network leaves behind.
type deviceRun struct {
	names  []string    // of the results
	values [][]float32 // on the host, in logical order
	state  nn.StateDict
}

// stepOn builds the network name with opts on dev, runs one training step
// (forward, the loss sum(out * w), backward, SGD with momentum and weight
// decay) on a batch of images, then a forward pass in evaluation mode,
// and returns the outputs, every parameter's gradient, the parameters and
// buffers after the step, and the state dict (on dev).
func stepOn(t *testing.T, dev tensor.Device, name string, opts Options, n, size int) deviceRun {
	t.Helper()
	m, err := New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	toDevice(t, m, dev)
	r := rand.New(rand.NewPCG(11, 12))
	host := func(shape ...int) *tensor.Tensor { return randOn(t, r, dev, shape...) }
	x := autograd.NewVar(host(n, 3, size, size), false)
	tp := autograd.NewTape()
	out := m.Forward(tp, x)
	w := autograd.Const(host(out.Value.Shape()...))
	tp.Backward(autograd.SumAll(tp, autograd.Mul(tp, out, w)))
	var res deviceRun
	add := func(name string, v *tensor.Tensor) {
		if v.Device() != dev {
			t.Fatalf("%s on %s, want %s", name, v.Device(), dev)
		}
		res.names = append(res.names, name)
		res.values = append(res.values, hostless.HostData(t, v))
	}
	add("output", out.Value)
	for _, p := range m.NamedParameters() {
		if p.Var.Grad == nil {
			t.Fatalf("%s: no gradient", p.Name)
		}
		add(p.Name+" gradient", p.Var.Grad)
	}
	opt, err := optim.NewSGD(m.Parameters(), optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 5e-4})
	if err != nil {
		t.Fatal(err)
	}
	opt.Step()
	m.Train(false)
	add("evaluation output", m.Forward(autograd.NewTape(), x).Value)
	for _, e := range m.StateDict() {
		add(e.Name, e.Tensor)
	}
	res.state = m.StateDict()
	return res
}

// TestResNetOnHostless trains small ResNets for one step on the CPU and on
// "hostlessfused" (every capability delegated to the CPU's kernels on
// handles no layer can read): the outputs, gradients, parameters, running
// statistics and evaluation outputs must be the CPU's bits. The state dict
// saved from the device (safetensors) then loads into a CPU network equal
// to the CPU's. On "hostless" (the core Backend only) the convolution
// panics naming tensor.ConvBackend (see nn's TestLayersOnHostless).
func TestResNetOnHostless(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		n, size int
	}{
		{"resnet18-w16", Options{NumClasses: 10, BNSplits: 2, Seed: 1}, 4, 32},
		{"resnet18-w8", Options{NumClasses: 0, Seed: 2}, 2, 16},
		{"resnet50-w4", Options{NumClasses: 5, ImageNetStem: true, Seed: 3}, 4, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := stepOn(t, tensor.CPU, tc.name, tc.opts, tc.n, tc.size)
			got := stepOn(t, hostless.FusedDevice, tc.name, tc.opts, tc.n, tc.size)
			for i, name := range want.names {
				if !hostless.SameBits(got.values[i], want.values[i]) {
					t.Errorf("%s: %s differs from the CPU's bits by %g", hostless.FusedName, name, hostless.RelDiff(got.values[i], want.values[i]))
				}
			}
			// Save the device's state dict, load it into a CPU network.
			var sd nn.StateDict
			for _, e := range got.state {
				h, err := e.Tensor.To(tensor.CPU)
				if err != nil {
					t.Fatal(err)
				}
				e.Tensor = h
				sd = append(sd, e)
			}
			var buf bytes.Buffer
			if err := safetensors.Encode(&buf, safetensors.FromStateDict("", sd), nil); err != nil {
				t.Fatal(err)
			}
			f, err := safetensors.Decode(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := f.StateDict()
			if err != nil {
				t.Fatal(err)
			}
			m, err := New(tc.name, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.LoadStateDict(loaded, true); err != nil {
				t.Fatal(err)
			}
			for i, e := range m.StateDict() {
				if w := want.state[i]; w.Name != e.Name || w.Int64 != e.Int64 || !hostless.SameBits(e.Tensor.Data(), w.Tensor.Contiguous().Data()) {
					t.Errorf("%s: loaded from the device's state dict, differs from the CPU's", e.Name)
				}
			}
		})
	}
}
