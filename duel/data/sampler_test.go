package data

import (
	"math"
	"slices"
	"testing"
)

// labelsOf returns labels with count[c] images of class c, interleaved.
func labelsOf(counts []int) []int32 {
	var out []int32
	left := append([]int(nil), counts...)
	for more := true; more; {
		more = false
		for c := range left {
			if left[c] > 0 {
				out = append(out, int32(c))
				left[c]--
				more = true
			}
		}
	}
	return out
}

// checkFrequencies draws n samples and checks every class frequency is
// within 3 standard errors of rho, and that ids and labels agree.
func checkFrequencies(t *testing.T, s *Sampler, labels []int32, n int) {
	t.Helper()
	rho := s.Probs()
	counts := make([]int, len(rho))
	ids := make([]int64, 250)
	lab := make([]int32, 250)
	for step := int64(0); step*250 < int64(n); step++ {
		s.Batch(step, ids, lab)
		for i, id := range ids {
			if labels[id] != lab[i] {
				t.Fatalf("draw %d of step %d: id %d has label %d, draw says %d", i, step, id, labels[id], lab[i])
			}
			counts[lab[i]]++
		}
	}
	for c, p := range rho {
		f := float64(counts[c]) / float64(n)
		se := math.Sqrt(p * (1 - p) / float64(n))
		if math.Abs(f-p) > 3*se+1e-12 {
			t.Errorf("class %d: frequency %.5f, want rho %.5f ± 3*%.5f", c, f, p, se)
		}
	}
}

func TestSamplerFrequencies(t *testing.T) {
	labels := labelsOf([]int{50, 40, 30, 60, 55, 45, 35, 20, 70, 65})
	cases := []SamplerConfig{
		{Profile: Dominant, RhoMax: 0.1, Seed: 1},
		{Profile: Dominant, RhoMax: 0.5, DominantClass: 3, Seed: 2},
		{Profile: Dominant, RhoMax: 0.9, DominantClass: 9, Seed: 3},
		{Profile: Dominant, RhoMax: 1, Seed: 4},
		{Profile: LongTail, ImbalanceRatio: 100, Seed: 5},
		{Profile: LongTail, ImbalanceRatio: 10, DominantClass: 4, Seed: 6},
		{Profile: Uniform, Seed: 7},
	}
	for _, cfg := range cases {
		s, err := NewSampler(labels, 10, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rho := s.Probs()
		var sum float64
		for _, p := range rho {
			sum += p
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("%+v: probabilities sum to %v", cfg, sum)
		}
		switch cfg.Profile {
		case Dominant:
			if rho[cfg.DominantClass] != cfg.RhoMax || (cfg.RhoMax < 1 && math.Abs(rho[(cfg.DominantClass+1)%10]-(1-cfg.RhoMax)/9) > 1e-15) {
				t.Fatalf("%+v: rho %v", cfg, rho)
			}
		case LongTail:
			head, tail := rho[cfg.DominantClass], rho[(cfg.DominantClass+9)%10]
			if math.Abs(head/tail-cfg.ImbalanceRatio) > 1e-9 {
				t.Fatalf("%+v: head/tail = %v", cfg, head/tail)
			}
		}
		checkFrequencies(t, s, labels, 100000)
	}
}

func TestSamplerUniformWithinClass(t *testing.T) {
	labels := labelsOf([]int{20, 20})
	s, err := NewSampler(labels, 2, SamplerConfig{RhoMax: 0.5, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int64]int{}
	const n = 40000
	for i := 0; i < n; i++ {
		id, _ := s.Draw(int64(i/100), i%100)
		counts[id]++
	}
	p := 1.0 / 40
	se := math.Sqrt(p * (1 - p) / n)
	for id := int64(0); id < 40; id++ {
		if f := float64(counts[id]) / n; math.Abs(f-p) > 3.5*se {
			t.Errorf("image %d: frequency %.4f, want %.4f", id, f, p)
		}
	}
}

func TestSamplerDeterministic(t *testing.T) {
	labels := labelsOf([]int{10, 10, 10})
	a, _ := NewSampler(labels, 3, SamplerConfig{RhoMax: 0.6, Seed: 42})
	b, _ := NewSampler(labels, 3, SamplerConfig{RhoMax: 0.6, Seed: 42})
	c, _ := NewSampler(labels, 3, SamplerConfig{RhoMax: 0.6, Seed: 43})
	same := 0
	for i := 0; i < 200; i++ {
		ida, _ := a.Draw(7, i)
		idb, _ := b.Draw(7, i)
		idc, _ := c.Draw(7, i)
		if ida != idb {
			t.Fatalf("draw %d differs for the same seed", i)
		}
		if ida == idc {
			same++
		}
	}
	if same > 100 {
		t.Fatalf("seeds 42 and 43 agree on %d of 200 draws", same)
	}
}

func TestLongTailSubset(t *testing.T) {
	labels := labelsOf([]int{500, 500, 500, 500, 500, 500, 500, 500, 500, 500})
	s, err := NewSampler(labels, 10, SamplerConfig{Profile: LongTailSubset, ImbalanceRatio: 100, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// CIFAR-10-LT sizes for n_max = 500, r = 100: floor(500 * 100^(-k/9)).
	want := []int{500, 299, 179, 107, 64, 38, 23, 13, 8, 5}
	for c, pool := range s.Pool() {
		if len(pool) != want[c] {
			t.Fatalf("class %d keeps %d images, want %d", c, len(pool), want[c])
		}
		for _, id := range pool {
			if labels[id] != int32(c) {
				t.Fatal("pool holds a wrong class")
			}
		}
	}
	checkFrequencies(t, s, labels, 100000)
	// Every draw comes from the fixed subset.
	in := map[int64]bool{}
	for _, pool := range s.Pool() {
		for _, id := range pool {
			in[int64(id)] = true
		}
	}
	for i := 0; i < 5000; i++ {
		if id, _ := s.Draw(int64(i), 0); !in[id] {
			t.Fatalf("draw %d: image %d is outside the subset", i, id)
		}
	}
}

func TestSamplerOnEmbedded(t *testing.T) {
	d, err := Open("default", "", true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSampler(d.Labels, d.NumClasses(), SamplerConfig{RhoMax: 0.7, DominantClass: 2, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	checkFrequencies(t, s, d.Labels, 50000)
}

func TestSamplerErrors(t *testing.T) {
	labels := labelsOf([]int{3, 0, 3})
	for _, c := range []struct {
		cfg     SamplerConfig
		classes int
	}{
		{SamplerConfig{RhoMax: 1.5}, 3},
		{SamplerConfig{RhoMax: math.NaN()}, 3},
		{SamplerConfig{RhoMax: 0.5, DominantClass: 3}, 3},
		{SamplerConfig{RhoMax: 0.5}, 3}, // class 1 is empty but has probability
		{SamplerConfig{Profile: LongTail, ImbalanceRatio: 0.5}, 3},
		{SamplerConfig{Profile: LongTailSubset, ImbalanceRatio: 10}, 3},
		{SamplerConfig{Profile: "zipf"}, 3},
		{SamplerConfig{RhoMax: 0.5}, 2}, // label 2 out of range
		{SamplerConfig{}, 0},
	} {
		if _, err := NewSampler(labels, c.classes, c.cfg); err == nil {
			t.Errorf("%+v with %d classes: no error", c.cfg, c.classes)
		}
	}
	// rho-max 1 never needs the empty class.
	if _, err := NewSampler(labels, 3, SamplerConfig{RhoMax: 1}); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkSamplerBatch(b *testing.B) {
	labels := labelsOf([]int{5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000})
	s, _ := NewSampler(labels, 10, SamplerConfig{RhoMax: 0.9, Seed: 1})
	ids := make([]int64, 256)
	lab := make([]int32, 256)
	for i := 0; i < b.N; i++ {
		s.Batch(int64(i), ids, lab)
	}
}

// TestClassProbs: the probabilities ClassProbs gives are the sampler's,
// bit for bit, for every profile that depends on nothing but its
// settings; a long-tailed subset's are refused.
func TestClassProbs(t *testing.T) {
	labels := make([]int32, 200)
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	for _, cfg := range []SamplerConfig{
		{RhoMax: 0.75, DominantClass: 3},
		{Profile: Dominant, RhoMax: 0.1},
		{Profile: Uniform},
		{Profile: LongTail, ImbalanceRatio: 100, DominantClass: 7},
		{Profile: LongTail, ImbalanceRatio: 1},
	} {
		s, err := NewSampler(labels, 10, cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ClassProbs(10, cfg)
		if err != nil || !slices.Equal(got, s.Probs()) {
			t.Errorf("%+v: ClassProbs %v, %v; the sampler's %v", cfg, got, err, s.Probs())
		}
	}
	if _, err := ClassProbs(10, SamplerConfig{Profile: LongTailSubset, ImbalanceRatio: 10}); err == nil {
		t.Error("ClassProbs of a long-tailed subset: no error")
	}
	if _, err := ClassProbs(10, SamplerConfig{RhoMax: 1.5}); err == nil {
		t.Error("ClassProbs of rho-max 1.5: no error")
	}
}
