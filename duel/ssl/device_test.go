package ssl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// mlpEncoder is a small encoder that computes on any device, even one
// with the core Backend only (Flatten, Linear, ReLU; no convolution or
// BatchNorm): the backbone of the steps on "hostless".
type mlpEncoder struct {
	*nn.Sequential
	dim int
}

func newMLPEncoder() (Encoder, error) {
	r := rand.New(rand.NewPCG(3, 4))
	const hidden, dim = 24, 12
	seq := nn.NewSequential(nn.NewFlatten(), nn.NewLinear(toyPer, hidden, true, r), nn.NewReLU(),
		nn.NewLinear(hidden, dim, true, r))
	return &mlpEncoder{Sequential: seq, dim: dim}, nil
}

func (e *mlpEncoder) Features(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	return e.Forward(tp, x)
}

func (e *mlpEncoder) FeatureDim() int { return e.dim }

// toDevice moves every parameter and buffer of m's parts to dev.
func toDevice(t *testing.T, m Method, dev tensor.Device) {
	t.Helper()
	for _, p := range m.Parts() {
		for _, v := range nn.Parameters(p.Module) {
			x, err := v.Value.To(dev)
			if err != nil {
				t.Fatal(err)
			}
			v.Value = x
		}
		for _, b := range nn.NamedBuffers(p.Module) {
			x, err := b.Buffer.Tensor.To(dev)
			if err != nil {
				t.Fatal(err)
			}
			b.Buffer.Tensor = x
		}
	}
}

// stepResult is what a few training steps of a method produce: the loss of
// each step, every tensor of the model (state dicts of all parts, in order)
// and the memory's rows.
type stepResult struct {
	losses []float32
	state  [][]float32
	memory []float32
}

// runOn trains a fresh method name with cfg on dev for steps steps of tb
// with Adam, reading results on the host only through hostless.HostData.
func runOn(t *testing.T, name string, cfg Config, dev tensor.Device, tb *toy, steps int) stepResult {
	t.Helper()
	m, err := New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	toDevice(t, m, dev)
	opt, err := optim.NewAdam(m.Parameters(), optim.AdamConfig{LR: 1e-2})
	if err != nil {
		t.Fatal(err)
	}
	var res stepResult
	for s := range steps {
		b := tb.batch(s)
		tp := autograd.NewTape()
		l, err := m.Loss(tp, b)
		if err != nil {
			t.Fatal(err)
		}
		if l.Value.Device() != dev {
			t.Fatalf("loss on %s, want %s", l.Value.Device(), dev)
		}
		res.losses = append(res.losses, hostless.HostData(t, l.Value)...)
		tp.Backward(l)
		opt.Step()
		opt.ZeroGrad()
		if err := m.Update(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range m.Parts() {
		sd := nn.StateDictOf(p.Module)
		for _, n := range sd.Names() {
			x, _ := sd.Get(n)
			if x.Device() != dev {
				t.Fatalf("%s.%s on %s, want %s", p.Prefix, n, x.Device(), dev)
			}
			res.state = append(res.state, hostless.HostData(t, x))
		}
	}
	if mem := m.Memory(); mem != nil {
		res.memory = append([]float32(nil), mem.Rows()[:mem.Len()*mem.Dim()]...)
	}
	return res
}

// deviceTol bounds |hostless - cpu| / (1 + |cpu|) for the first step's
// loss on "hostless", where every capability is composed of core Backend
// operations in float32 (Linear, L2 normalisation, the losses): a few
// float32 roundings of O(1) values, like nn/loss's composedTol.
const deviceTol = 1e-5

// TestStepsOnHostless trains every registered method (and the variants
// that move other tensors: keys from the target view, memory refresh,
// memory-only negatives) for a few steps on the CPU and on
// "hostlessfused", whose buffers have no host storage, so that any host
// read of a device tensor in a step panics. The encoder is ssl_test.go's
// ResNet (resnet18-w4, with MoCo's ghost BatchNorm and key shuffle, BYOL's
// BatchNorm heads): the losses, every tensor of the model (EMA copies and
// BatchNorm statistics included) and the memory rows must be the CPU's
// bits, the same kernels computing both. On "hostless" (core Backend only:
// no convolution or BatchNorm) an MLP encoder without BatchNorm, and heads
// without it (HeadBN false), runs the first step and its loss must be
// within deviceTol of the CPU's; a method whose heads keep a BatchNorm
// even then (Barlow Twins' projector) is left out there.
func TestStepsOnHostless(t *testing.T) {
	tb := newToy(16, 8)
	type stepsTest struct {
		name, method string
		edit         func(*Config)
	}
	var tests []stepsTest
	for _, name := range Names() {
		tests = append(tests, stepsTest{name, name, nil})
	}
	tests = append(tests,
		stepsTest{"dmoco/target+refresh", "dmoco", func(c *Config) { c.MemoryFrom, c.MemRefresh, c.Negatives = "target", 4, NegMixed }},
		stepsTest{"dsimclr/memory+refresh", "dsimclr", func(c *Config) { c.Negatives, c.Eps, c.MemRefresh = NegMemory, 0, 4 }},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := methodConfig(t, tc.method, toyConfig(tb))
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			const steps = 3
			want := runOn(t, tc.method, cfg, tensor.CPU, tb, steps)
			got := runOn(t, tc.method, cfg, hostless.FusedDevice, tb, steps)
			if !hostless.SameBits(got.losses, want.losses) {
				t.Errorf("%s: losses %v, CPU %v", hostless.FusedName, got.losses, want.losses)
			}
			if len(got.state) != len(want.state) {
				t.Fatalf("%s: %d state tensors, CPU %d", hostless.FusedName, len(got.state), len(want.state))
			}
			for i := range want.state {
				if !hostless.SameBits(got.state[i], want.state[i]) {
					t.Errorf("%s: state tensor %d differs from the CPU's bits by %g", hostless.FusedName, i, hostless.RelDiff(got.state[i], want.state[i]))
				}
			}
			if !hostless.SameBits(got.memory, want.memory) {
				t.Errorf("%s: memory rows differ from the CPU's bits by %g", hostless.FusedName, hostless.RelDiff(got.memory, want.memory))
			}

			cfg.NewEncoder, cfg.HeadBN = newMLPEncoder, false
			if hasBatchNorm(t, tc.method, cfg) {
				return
			}
			want = runOn(t, tc.method, cfg, tensor.CPU, tb, 1)
			plain := runOn(t, tc.method, cfg, hostless.Device, tb, 1)
			if d := hostless.RelDiff(plain.losses, want.losses); d > deviceTol || math.IsNaN(d) {
				t.Errorf("%s: first loss %v, CPU %v (difference %g, want <= %g)", hostless.Name, plain.losses, want.losses, d, deviceTol)
			}
		})
	}
}

// hasBatchNorm reports whether method name built with cfg has a
// BatchNorm in any of its parts, which a device with the core Backend
// only cannot run.
func hasBatchNorm(t *testing.T, name string, cfg Config) bool {
	t.Helper()
	m, err := New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Parts() {
		for _, nm := range nn.Modules(p.Module) {
			if _, ok := nm.Module.(*nn.BatchNorm); ok {
				return true
			}
		}
	}
	return false
}
