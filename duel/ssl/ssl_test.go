package ssl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/nn/resnet"
	"github.com/duel-ssl/duel/tensor"
)

// toy is a tiny problem: n fixed random 3x8x8 images; each step draws a
// batch of them and makes two views by adding small noise.
type toy struct {
	n, b   int
	images []float32
}

const toyPer = 3 * 8 * 8

func newToy(n, b int) *toy {
	r := rand.New(rand.NewPCG(1, 2))
	t := &toy{n: n, b: b, images: make([]float32, n*toyPer)}
	for i := range t.images {
		t.images[i] = float32(r.NormFloat64())
	}
	return t
}

func (t *toy) batch(step int) *Batch {
	r := rand.New(rand.NewPCG(uint64(step), 7))
	b := &Batch{Step: step, IDs: make([]int64, t.b), Labels: make([]int32, t.b)}
	var views [2][]float32
	for v := range views {
		views[v] = make([]float32, t.b*toyPer)
	}
	for i := 0; i < t.b; i++ {
		id := r.IntN(t.n)
		b.IDs[i], b.Labels[i] = int64(id), int32(id%4)
		for v := range views {
			for j := 0; j < toyPer; j++ {
				views[v][i*toyPer+j] = t.images[id*toyPer+j] + 0.1*float32(r.NormFloat64())
			}
		}
	}
	b.Views[0] = tensor.FromSlice(views[0], t.b, 3, 8, 8)
	b.Views[1] = tensor.FromSlice(views[1], t.b, 3, 8, 8)
	return b
}

func (t *toy) fetch(dst []float32, ids []int64, step int) error {
	for i, id := range ids {
		copy(dst[i*toyPer:(i+1)*toyPer], t.images[int(id)*toyPer:(int(id)+1)*toyPer])
	}
	return nil
}

func toyConfig(t *toy) Config {
	return Config{
		NewEncoder: func() (Encoder, error) { return resnet.New("resnet18-w4", resnet.Options{Seed: 3}) },
		ProjDim:    16, ProjHidden: 0, PredHidden: 16, HeadBN: true,
		Tau: 0.5, Eps: 1, EMA: 0.9, BarlowLambda: 5e-3,
		MemorySize: 32, MemNegatives: 16, Admission: "protected",
		MemoryFrom: "step", ShuffleBN: true, BNSplits: 2,
		Seed: 5, Images: ImageSourceFunc(t.fetch),
	}
}

func methodConfig(t *testing.T, name string, cfg Config) Config {
	info, ok := Lookup(name)
	if !ok {
		t.Fatalf("method %s not registered", name)
	}
	cfg.Negatives = info.Negatives
	if cfg.Negatives == "" {
		cfg.Negatives = NegBatch
	}
	cfg.Policy = info.Policy
	if name != "moco" && name != "dmoco" {
		cfg.BNSplits = 1
	}
	return cfg
}

// train runs steps steps of m with Adam and returns the losses.
func train(t *testing.T, m Method, tb *toy, steps int, lr float64) []float64 {
	t.Helper()
	opt, err := optim.NewAdam(m.Parameters(), optim.AdamConfig{LR: lr})
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for s := 0; s < steps; s++ {
		b := tb.batch(s)
		tp := autograd.NewTape()
		l, err := m.Loss(tp, b)
		if err != nil {
			t.Fatal(err)
		}
		v := float64(l.Value.Item())
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s step %d: loss %v", m.Name(), s, v)
		}
		losses = append(losses, v)
		tp.Backward(l)
		opt.Step()
		opt.ZeroGrad()
		if err := m.Update(b); err != nil {
			t.Fatal(err)
		}
	}
	return losses
}

func TestMethodsRun(t *testing.T) {
	tb := newToy(16, 8)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			m, err := New(name, methodConfig(t, name, toyConfig(tb)))
			if err != nil {
				t.Fatal(err)
			}
			if m.Name() != name {
				t.Errorf("Name() = %q", m.Name())
			}
			train(t, m, tb, 3, 1e-3)
			info, _ := Lookup(name)
			if (m.Memory() != nil) != info.Memory {
				t.Errorf("memory %v, info says %v", m.Memory() != nil, info.Memory)
			}
			if m.Memory() != nil && m.Memory().Len() != 24 {
				t.Errorf("memory holds %d rows after 3 steps of 8, expected 24", m.Memory().Len())
			}
			if m.Parts()[0].Prefix != "" || m.Parts()[0].Module != nn.Module(m.Encoder()) {
				t.Errorf("first part is not the encoder")
			}
		})
	}
}

func TestLossDecreases(t *testing.T) {
	tb := newToy(8, 8)
	for _, name := range []string{"moco", "simclr", "dsimclr"} {
		t.Run(name, func(t *testing.T) {
			cfg := methodConfig(t, name, toyConfig(tb))
			cfg.MemorySize = 16 // full after two steps: compare losses with a full memory
			m, err := New(name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ls := train(t, m, tb, 20, 3e-3)
			first := (ls[2] + ls[3] + ls[4]) / 3
			last := (ls[17] + ls[18] + ls[19]) / 3
			if !(last < first) {
				t.Errorf("loss did not decrease: first steps %.4f, last steps %.4f (%v)", first, last, ls)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tb := newToy(4, 4)
	for _, tc := range []struct {
		name   string
		method string
		edit   func(*Config)
	}{
		{"unknown method", "mocha", func(*Config) {}},
		{"no encoder", "simclr", func(c *Config) { c.NewEncoder = nil }},
		{"bad tau", "simclr", func(c *Config) { c.Tau = 0 }},
		{"bad eps", "moco", func(c *Config) { c.Eps = 2 }},
		{"memory negatives without memory", "simclr", func(c *Config) { c.Negatives = NegMixed }},
		{"bad negatives", "dmoco", func(c *Config) { c.Negatives = "all" }},
		{"bad ema", "byol", func(c *Config) { c.EMA = 1 }},
		{"bad memory size", "dmoco", func(c *Config) { c.MemorySize = 0 }},
		{"bad policy", "dmoco", func(c *Config) { c.Policy = "lru" }},
		{"no images", "dsimclr", func(c *Config) { c.Images = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := toyConfig(tb)
			if _, ok := Lookup(tc.method); ok {
				cfg = methodConfig(t, tc.method, cfg)
			}
			tc.edit(&cfg)
			if _, err := New(tc.method, cfg); err == nil {
				t.Errorf("no error")
			}
		})
	}
}

func TestPickRows(t *testing.T) {
	for _, tc := range []struct{ k, n int }{{10, 0}, {10, 3}, {10, 10}, {10, 20}, {1, 1}} {
		idx := pickRows(tc.k, tc.n, 1, 2)
		want := tc.n
		if want == 0 || want > tc.k {
			want = tc.k
		}
		if len(idx) != want {
			t.Fatalf("pickRows(%d, %d): %d rows", tc.k, tc.n, len(idx))
		}
		seen := map[int]bool{}
		for _, i := range idx {
			if i < 0 || i >= tc.k || seen[i] {
				t.Fatalf("pickRows(%d, %d) = %v", tc.k, tc.n, idx)
			}
			seen[i] = true
		}
	}
}

func TestShuffleRoundTrip(t *testing.T) {
	x := tensor.FromSlice([]float32{0, 0, 1, 1, 2, 2, 3, 3}, 4, 2)
	p := shufflePerm(4, 9, 1, 0)
	y := permute(x, p)
	inv := make([]int, 4)
	for i, v := range p {
		inv[v] = i
	}
	z := permute(y, inv)
	if !tensor.AllClose(x, z, 0, 0) {
		t.Errorf("permute back gives %v", z)
	}
}

func TestEMAUpdate(t *testing.T) {
	a, _ := resnet.New("resnet18-w4", resnet.Options{Seed: 1})
	b, _ := resnet.New("resnet18-w4", resnet.Options{Seed: 2})
	pa, pb := nn.Parameters(a)[0].Value.Data(), nn.Parameters(b)[0].Value.Data()
	want := 0.75*pa[0] + 0.25*pb[0]
	emaUpdate(a, b, 0.75)
	if math.Abs(float64(pa[0]-want)) > 1e-7 {
		t.Errorf("ema: got %v, want %v", pa[0], want)
	}
}

// TestVariants runs the Appendix F.3 ablation settings and the other
// options that change the computation for a few steps each.
func TestVariants(t *testing.T) {
	tb := newToy(16, 8)
	for _, tc := range []struct {
		method, negatives string
		eps               float64
		memoryFrom        string
		policy            string
	}{
		{"dsimclr", NegBatch, 1, "step", "duel"},
		{"dsimclr", NegMemory, 0, "step", "duel"},
		{"dsimclr", NegMixed, 0, "target", "random"},
		{"dmoco", NegMixed, 1, "target", "reservoir"},
		{"dmoco", NegMemory, 0, "step", "duel"},
		{"moco", NegBatch, 1, "step", "fifo"},
	} {
		t.Run(tc.method+"/"+tc.negatives+"/"+tc.memoryFrom, func(t *testing.T) {
			cfg := methodConfig(t, tc.method, toyConfig(tb))
			cfg.Negatives, cfg.Eps, cfg.MemoryFrom, cfg.Policy = tc.negatives, tc.eps, tc.memoryFrom, tc.policy
			m, err := New(tc.method, cfg)
			if err != nil {
				t.Fatal(err)
			}
			train(t, m, tb, 3, 1e-3)
			if m.Memory().Len() != 24 {
				t.Errorf("memory holds %d rows", m.Memory().Len())
			}
		})
	}
}
