package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestKNNSeparableClusters(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		vote Vote
		k    int
	}{
		{"weighted k200", Weighted, 200},
		{"majority k20", Majority, 20},
		{"weighted k1", Weighted, 1},
		{"k larger than train", Weighted, 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := clusters(r, 1200, 32, 10, 1.5)
			train, test := all.Subset(seq(0, 1000)), all.Subset(seq(1000, 1200))
			cfg := DefaultKNNConfig()
			cfg.Vote, cfg.K = tc.vote, tc.k
			res, err := KNN(train, test, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Top1 < 0.98 || res.Top5 < res.Top1 || !res.HasTop5 || res.Train != 1000 || res.Test != 200 {
				t.Errorf("%+v, expected top1 >= 0.98 on separable clusters", res)
			}
		})
	}
}

func TestKNNRandomLabelsIsChance(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	all := shuffledLabels(r, clusters(r, 3000, 16, 10, 1.5), 10)
	train, test := all.Subset(seq(0, 2000)), all.Subset(seq(2000, 3000))
	res, err := KNN(train, test, DefaultKNNConfig())
	if err != nil {
		t.Fatal(err)
	}
	// chance is 0.1; 1000 test rows: standard error about 0.01
	if math.Abs(res.Top1-0.1) > 0.05 || math.Abs(res.Top5-0.5) > 0.08 {
		t.Errorf("%+v, expected top1 ~ 0.1 and top5 ~ 0.5 on random labels", res)
	}
}

func TestKNNMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		ntrain, ntest, d, classes, k int
		vote                         Vote
	}{
		{1, 1, 1, 1, 5, Weighted},
		{7, 3, 5, 3, 3, Majority},
		{300, 257, 17, 7, 200, Weighted},
		{513, 600, 33, 12, 10, Majority},
		{100, 0, 8, 4, 5, Weighted},
	} {
		train := clusters(r, tc.ntrain, tc.d, tc.classes, 0.3)
		test := clusters(r, tc.ntest, tc.d, tc.classes, 0.3)
		cfg := DefaultKNNConfig()
		cfg.K, cfg.Vote, cfg.Classes = tc.k, tc.vote, tc.classes
		want := naiveKNNScores(train, test, cfg, tc.classes)
		got := make([][]float64, test.N)
		if err := knnScores(train, test, cfg.withK(train.N), tc.classes, func(i int, s []float64) {
			got[i] = append([]float64(nil), s...)
		}); err != nil {
			t.Fatal(err)
		}
		mismatch := 0
		for i := range want {
			for c := range want[i] {
				if math.Abs(want[i][c]-got[i][c]) > 1e-4*math.Max(1, math.Abs(want[i][c])) {
					mismatch++
					if mismatch < 5 {
						t.Errorf("%+v row %d class %d: score %v, naive %v", tc, i, c, got[i][c], want[i][c])
					}
				}
			}
		}
		pred, err := KNNPredict(train, test, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range pred {
			if w := argsortDesc(want[i])[0]; pred[i] != w {
				t.Errorf("%+v row %d: predicted %d, naive %d", tc, i, pred[i], w)
			}
		}
	}
}

// withK clamps K like knnCheck does.
func (c KNNConfig) withK(n int) KNNConfig { c.K = min(c.K, n); return c }

func TestNeighbourHeapTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 5, 64, 1000} {
		for _, k := range []int{1, 3, 64, 200} {
			k = min(k, n)
			sims := make([]float32, n)
			for i := range sims {
				sims[i] = float32(r.IntN(20)) / 20 // many ties
			}
			var h neighbourHeap
			h.topK(sims, k)
			got := append([]neighbour(nil), h...)
			sort.Slice(got, func(a, b int) bool { return farther(got[b], got[a]) })
			all := make([]neighbour, n)
			for i, s := range sims {
				all[i] = neighbour{s, i}
			}
			sort.Slice(all, func(a, b int) bool { return farther(all[b], all[a]) })
			for i := 0; i < k; i++ {
				if got[i] != all[i] {
					t.Fatalf("n=%d k=%d: neighbour %d is %+v, expected %+v", n, k, i, got[i], all[i])
				}
			}
		}
	}
}

func TestKNNBadInput(t *testing.T) {
	f := clusters(rand.New(rand.NewPCG(1, 1)), 10, 4, 2, 1)
	g := clusters(rand.New(rand.NewPCG(1, 1)), 10, 5, 2, 1)
	empty := &Features{D: 4}
	for _, tc := range []struct {
		name        string
		train, test *Features
		cfg         KNNConfig
	}{
		{"no train", empty, f, DefaultKNNConfig()},
		{"dim mismatch", f, g, DefaultKNNConfig()},
		{"k0", f, f, KNNConfig{K: 0, Temperature: 1}},
		{"T0", f, f, KNNConfig{K: 3}},
		{"bad vote", f, f, KNNConfig{K: 3, Vote: 7}},
		{"too few classes", f, f, KNNConfig{K: 3, Temperature: 1, Classes: 1}},
	} {
		if _, err := KNN(tc.train, tc.test, tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestParseVote(t *testing.T) {
	for _, v := range []Vote{Weighted, Majority} {
		if got, err := ParseVote(v.String()); err != nil || got != v {
			t.Errorf("ParseVote(%q) = %v, %v", v, got, err)
		}
	}
	if _, err := ParseVote("cosine"); err == nil {
		t.Error("ParseVote(cosine): no error")
	}
}

func seq(lo, hi int) []int {
	s := make([]int, hi-lo)
	for i := range s {
		s[i] = lo + i
	}
	return s
}

// TestKNNSmallTemperature checks the weighted vote at temperatures whose
// exp(s/T) overflows float64 (T below 0.0014 for s near 1): the class
// scores stay finite and rank the classes as the weights' limit does,
// the nearest neighbour's class first; at 1e-3 the accuracy of separable
// clusters is not chance (every voted class scored +Inf and tied, and
// the lowest class won).
func TestKNNSmallTemperature(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	all := clusters(r, 600, 32, 10, 1.5)
	train, test := all.Subset(seq(0, 400)), all.Subset(seq(400, 600))
	nearest := DefaultKNNConfig()
	nearest.K, nearest.Classes = 1, 10
	want, err := KNNPredict(train, test, nearest)
	if err != nil {
		t.Fatal(err)
	}
	for _, temp := range []float64{1e-3, 1e-5, 1e-30} {
		cfg := DefaultKNNConfig()
		cfg.K, cfg.Temperature, cfg.Classes = 20, temp, 10
		if err := knnScores(train, test, cfg, 10, func(i int, s []float64) {
			for c, v := range s {
				if math.IsInf(v, 0) || math.IsNaN(v) {
					t.Fatalf("T %g: row %d class %d scores %v", temp, i, c, v)
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		got, err := KNNPredict(train, test, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("T %g: predictions differ from the nearest neighbour's class", temp)
		}
		res, err := KNN(train, test, cfg)
		if err != nil || res.Top1 < 0.9 {
			t.Errorf("T %g: top-1 %v, %v; want the separable clusters' (> 0.9)", temp, res.Top1, err)
		}
	}
}
