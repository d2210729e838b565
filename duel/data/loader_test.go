package data

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/duel-ssl/duel/duel/data/augment"
)

func embeddedTrain(t testing.TB) *Dataset {
	t.Helper()
	d, err := Open("default", "", true)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func loaderBatches(t *testing.T, d *Dataset, workers, steps int, start int64) []*Batch {
	t.Helper()
	s, err := NewSampler(d.Labels, d.NumClasses(), SamplerConfig{RhoMax: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	mean, std, _ := NormStats("cifar10")
	l, err := NewLoader(d, s, augment.Paper(32, mean, std), LoaderConfig{BatchSize: 37, Workers: workers, Seed: 9, StartStep: start})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []*Batch
	for i := 0; i < steps; i++ {
		b, err := l.Next()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestLoaderDeterministicAcrossWorkers(t *testing.T) {
	d := embeddedTrain(t)
	a := loaderBatches(t, d, 1, 4, 0)
	b := loaderBatches(t, d, 3, 4, 0)
	c := loaderBatches(t, d, 2, 2, 2) // resumed at step 2
	for i := range a {
		if a[i].Step != int64(i) || b[i].Step != int64(i) {
			t.Fatalf("steps %d %d, want %d", a[i].Step, b[i].Step, i)
		}
		for v := 0; v < 2; v++ {
			for k := range a[i].Views[v] {
				if a[i].Views[v][k] != b[i].Views[v][k] {
					t.Fatalf("step %d view %d value %d: 1 worker %v, 3 workers %v", i, v, k, a[i].Views[v][k], b[i].Views[v][k])
				}
			}
		}
		for k := range a[i].IDs {
			if a[i].IDs[k] != b[i].IDs[k] || a[i].Labels[k] != d.Labels[a[i].IDs[k]] {
				t.Fatalf("step %d: ids or labels differ", i)
			}
		}
	}
	for k := range c[0].Views[1] {
		if c[0].Views[1][k] != a[2].Views[1][k] {
			t.Fatal("resuming at step 2 gives a different batch")
		}
	}
	// The two views of an image differ (independent augmentations).
	per := 3 * 32 * 32
	same := 0
	for k := 0; k < per; k++ {
		if a[0].Views[0][k] == a[0].Views[1][k] {
			same++
		}
	}
	if same == per {
		t.Fatal("the two views are identical")
	}
	if a[0].N != 37 || a[0].C != 3 || a[0].H != 32 || a[0].W != 32 || len(a[0].Views[0]) != 37*per {
		t.Fatalf("batch shape %d x %d x %d x %d", a[0].N, a[0].C, a[0].H, a[0].W)
	}
}

func TestLoaderCloseAndReuse(t *testing.T) {
	d := embeddedTrain(t)
	s, _ := NewSampler(d.Labels, 10, SamplerConfig{RhoMax: 0.1, Seed: 1})
	before := runtime.NumGoroutine()
	l, err := NewLoader(d, s, augment.SimCLR(24, nil, nil), LoaderConfig{BatchSize: 8, Workers: 2, Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := l.Next()
	if c, h, w := l.ViewShape(); b.H != 24 || c != 3 || h != 24 || w != 24 {
		t.Fatalf("view size %d", b.H)
	}
	l.Release(b)
	if _, err := l.Next(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l.Close()
	if _, err := l.Next(); err != ErrClosed {
		t.Fatalf("Next after Close: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Close, %d before", n, before)
	}
}

func TestLoaderErrors(t *testing.T) {
	d := embeddedTrain(t)
	s, _ := NewSampler(d.Labels, 10, SamplerConfig{RhoMax: 0.1})
	small, err := NewSampler(d.Labels[:10], 10, SamplerConfig{RhoMax: 1, DominantClass: int(d.Labels[0])})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s   *Sampler
		p   *augment.Pipeline
		cfg LoaderConfig
	}{
		{s, augment.Paper(32, nil, nil), LoaderConfig{BatchSize: 0}},
		{s, augment.Paper(32, nil, nil), LoaderConfig{BatchSize: 4, Workers: -1}},
		{s, augment.Paper(32, []float32{0.5}, nil), LoaderConfig{BatchSize: 4}},
		{small, augment.Paper(32, nil, nil), LoaderConfig{BatchSize: 4}},
		{nil, augment.Paper(32, nil, nil), LoaderConfig{BatchSize: 4}},
		{s, augment.Paper(32, nil, nil), LoaderConfig{BatchSize: 4, Rank: 2, Ranks: 2}},
		{s, augment.Paper(32, nil, nil), LoaderConfig{BatchSize: 4, Rank: -1, Ranks: 2}},
		{s, augment.Paper(32, nil, nil), LoaderConfig{BatchSize: 4, Ranks: 5}},
	} {
		if l, err := NewLoader(d, c.s, c.p, c.cfg); err == nil {
			l.Close()
			t.Errorf("%+v: no error", c.cfg)
		}
	}
}

func TestLoaderGrayscale(t *testing.T) {
	// An MNIST-like 1-channel set, used as is and replicated to RGB.
	d := &Dataset{Name: "mnist", H: 28, W: 28, C: 1, Pixels: synthImages(20, 28, 28, 1), Labels: make([]int32, 20), Classes: mnistClasses[:1]}
	s, _ := NewSampler(d.Labels, 1, SamplerConfig{Profile: Uniform})
	for _, ds := range []*Dataset{d, d.ToRGB()} {
		l, err := NewLoader(ds, s, augment.SimCLR(28, nil, nil), LoaderConfig{BatchSize: 5})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := l.Next()
		l.Close()
		if b.C != ds.C || len(b.Views[0]) != 5*ds.C*28*28 {
			t.Fatalf("C=%d: batch C %d, %d values", ds.C, b.C, len(b.Views[0]))
		}
		if ds.C == 3 { // gray in, gray out: all channels equal
			hw := 28 * 28
			for i := 0; i < hw; i++ {
				if math.Abs(float64(b.Views[0][i]-b.Views[0][hw+i])) > 1e-6 {
					t.Fatal("replicated channels differ after augmentation")
				}
			}
		}
	}
}

func TestEvalIterator(t *testing.T) {
	d := &Dataset{Name: "t", H: 2, W: 2, C: 3, Pixels: synthImages(5, 2, 2, 3), Labels: []int32{0, 1, 0, 1, 0}, Classes: []string{"a", "b"}}
	it, err := NewEvalIterator(d, 0, []float32{0.5, 0.5, 0.5}, []float32{0.5, 0.5, 0.5}, 2)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for b, ok := it.Next(); ok; b, ok = it.Next() {
		sizes = append(sizes, b.N)
		for i := 0; i < b.N; i++ {
			img := d.Image(int(b.IDs[i]))
			// pixel 3, channel 2 -> CHW offset 2*4+3
			want := (float32(img[3*3+2])/255 - 0.5) / 0.5
			if got := b.Views[0][i*12+2*4+3]; math.Abs(float64(got-want)) > 1e-6 {
				t.Fatalf("image %d: %v, want %v", b.IDs[i], got, want)
			}
		}
	}
	if len(sizes) != 3 || sizes[2] != 1 {
		t.Fatalf("batch sizes %v, want [2 2 1]", sizes)
	}
	it.Reset()
	if b, ok := it.Next(); !ok || b.IDs[0] != 0 {
		t.Fatal("Reset")
	}
	if _, err := NewEvalIterator(d, 0, nil, nil, 0); err == nil {
		t.Fatal("batch 0 accepted")
	}
}

func BenchmarkLoaderPaper(b *testing.B) {
	d := embeddedTrain(b)
	s, _ := NewSampler(d.Labels, 10, SamplerConfig{RhoMax: 0.5})
	l, _ := NewLoader(d, s, augment.Paper(32, nil, nil), LoaderConfig{BatchSize: 256})
	defer l.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bt, _ := l.Next()
		l.Release(bt)
	}
	b.ReportMetric(float64(b.N*512)/b.Elapsed().Seconds(), "views/s")
}

// TestLoaderShards: the loaders of 3 ranks together produce the single
// loader's batches, rank r holding positions r, r+3, ... (37 images: the
// shards have 13, 12 and 12), each image augmented with the draws it has
// in the whole batch, and every rank seeing the whole batch's ids.
func TestLoaderShards(t *testing.T) {
	d := embeddedTrain(t)
	whole := loaderBatches(t, d, 2, 2, 5)
	s, err := NewSampler(d.Labels, d.NumClasses(), SamplerConfig{RhoMax: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	mean, std, _ := NormStats("cifar10")
	const ranks = 3
	for r := range ranks {
		l, err := NewLoader(d, s, augment.Paper(32, mean, std), LoaderConfig{BatchSize: 37, Workers: 2, Seed: 9, StartStep: 5, Rank: r, Ranks: ranks})
		if err != nil {
			t.Fatal(err)
		}
		for step, w := range whole {
			b, err := l.Next()
			if err != nil {
				t.Fatal(err)
			}
			per := b.C * b.H * b.W
			if want := (37 - r + ranks - 1) / ranks; b.N != want || len(b.IDs) != 37 {
				t.Fatalf("rank %d: %d images and %d ids, expected %d and 37", r, b.N, len(b.IDs), want)
			}
			for k := 0; k < b.N; k++ {
				i := k*ranks + r
				if b.IDs[i] != w.IDs[i] || b.Labels[i] != w.Labels[i] {
					t.Fatalf("rank %d step %d: ids differ from the whole batch's", r, step)
				}
				for v := range b.Views {
					got, want := b.Views[v][k*per:(k+1)*per], w.Views[v][i*per:(i+1)*per]
					for j := range got {
						if got[j] != want[j] {
							t.Fatalf("rank %d step %d image %d view %d: not the whole batch's image %d", r, step, k, v, i)
						}
					}
				}
			}
		}
		l.Close()
	}
}
