package eval

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestLinearProbeSeparableClusters(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	all := clusters(r, 1200, 32, 10, 1.5)
	train, test := all.Subset(seq(0, 1000)), all.Subset(seq(1000, 1200))
	cfg := DefaultLinearConfig()
	cfg.Epochs = 100
	var epochs []float64
	cfg.Progress = func(e int, l float64) { epochs = append(epochs, l) }
	res, err := LinearProbe(train, test, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Top1 < 0.98 || res.Train != 1000 || res.Test != 200 || !res.HasTop5 {
		t.Errorf("%+v, expected top1 >= 0.98 on separable clusters", res)
	}
	if len(epochs) != 100 || !(epochs[99] < epochs[0]) || res.TrainLoss != epochs[99] {
		t.Errorf("epoch losses %v, last %v: expected 100 decreasing", epochs, res.TrainLoss)
	}
}

func TestLinearProbeRandomLabelsIsChance(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	all := shuffledLabels(r, clusters(r, 3000, 16, 10, 1.5), 10)
	train, test := all.Subset(seq(0, 2000)), all.Subset(seq(2000, 3000))
	cfg := DefaultLinearConfig()
	cfg.Epochs = 5
	res, err := LinearProbe(train, test, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Top1-0.1) > 0.05 {
		t.Errorf("%+v, expected top1 ~ 0.1 on random labels", res)
	}
}

func TestLinearProbeDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	all := clusters(r, 300, 8, 4, 0.5)
	train, test := all.Subset(seq(0, 200)), all.Subset(seq(200, 300))
	cfg := DefaultLinearConfig()
	cfg.Epochs, cfg.Batch, cfg.Seed = 3, 64, 9
	a, err := LinearProbe(train, test, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LinearProbe(train, test, cfg)
	if a != b {
		t.Errorf("same seed, different results: %+v vs %+v", a, b)
	}
	if a.HasTop5 || a.Top5 != 0 {
		t.Errorf("4 classes: top-5 reported: %+v", a)
	}
}

func TestLinearProbeBadInput(t *testing.T) {
	f := clusters(rand.New(rand.NewPCG(1, 1)), 10, 4, 2, 1)
	g := clusters(rand.New(rand.NewPCG(1, 1)), 10, 5, 2, 1)
	def := DefaultLinearConfig()
	mod := func(m func(*LinearConfig)) LinearConfig { c := def; m(&c); return c }
	for _, tc := range []struct {
		name        string
		train, test *Features
		cfg         LinearConfig
	}{
		{"no train", &Features{D: 4}, f, def},
		{"dim mismatch", f, g, def},
		{"batch 0", f, f, mod(func(c *LinearConfig) { c.Batch = 0 })},
		{"negative epochs", f, f, mod(func(c *LinearConfig) { c.Epochs = -1 })},
		{"lr 0", f, f, mod(func(c *LinearConfig) { c.LR = 0 })},
		{"lr NaN", f, f, mod(func(c *LinearConfig) { c.LR = math.NaN() })},
		{"negative wd", f, f, mod(func(c *LinearConfig) { c.WeightDecay = -1 })},
		{"too few classes", f, f, mod(func(c *LinearConfig) { c.Classes = 1 })},
		{"diverges", f, f, mod(func(c *LinearConfig) { c.LR = 1e38; c.Epochs = 3 })},
	} {
		if _, err := LinearProbe(tc.train, tc.test, tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
