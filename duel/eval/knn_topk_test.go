package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// heapKNN is knnScores without tensor.TopK: the CPU's
// similarities, neighbourHeap.topK per test row, and the votes summed in
// heap order. It returns the accuracy and the predictions.
func heapKNN(t *testing.T, train, test *Features, cfg KNNConfig) (Result, []int) {
	t.Helper()
	classes, err := knnCheck(train, test, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := train.Normalized()
	simFn, err := similarities(tr)
	if err != nil {
		t.Fatal(err)
	}
	sims, q := make([]float32, tr.N), make([]float32, tr.D)
	var h neighbourHeap
	sc := make([]float64, classes)
	var acc accuracy
	pred := make([]int, test.N)
	for i := 0; i < test.N; i++ {
		NormalizeInto(q, test.Row(i))
		if err := simFn(sims, q, 1); err != nil {
			t.Fatal(err)
		}
		h.topK(sims, cfg.K)
		clear(sc)
		for _, nb := range h {
			w := 1.0
			if cfg.Vote == Weighted {
				w = math.Exp(float64(nb.sim) * (1 / cfg.Temperature))
			}
			sc[tr.Labels[nb.idx]] += w
		}
		acc.add(sc, int(test.Labels[i]))
		pred[i] = argsortDesc(sc)[0]
	}
	return acc.result(classes, train.N), pred
}

// TestKNNAccuracyUnchanged: on the data sets of the kNN tests, KNN (the
// neighbours from tensor.TopK, votes summed nearest first) gives exactly
// the accuracies and predictions of heapKNN's heap-order selection,
// on the CPU and on "hostlessfused" (the capability on a device) and
// "hostless" (the fallback: the similarity block copied to the host).
func TestKNNAccuracyUnchanged(t *testing.T) {
	type set struct {
		name        string
		train, test *Features
		k           int
		vote        Vote
	}
	var sets []set
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		vote Vote
		k    int
	}{{Weighted, 200}, {Majority, 20}, {Weighted, 1}, {Weighted, 100000}} {
		all := clusters(r, 1200, 32, 10, 1.5)
		sets = append(sets, set{"separable", all.Subset(seq(0, 1000)), all.Subset(seq(1000, 1200)), tc.k, tc.vote})
	}
	r = rand.New(rand.NewPCG(3, 4))
	all := shuffledLabels(r, clusters(r, 3000, 16, 10, 1.5), 10)
	sets = append(sets, set{"random labels", all.Subset(seq(0, 2000)), all.Subset(seq(2000, 3000)), 200, Weighted})
	r = rand.New(rand.NewPCG(9, 10))
	all = clusters(r, 700, 12, 5, 3)
	for _, v := range []Vote{Weighted, Majority} {
		sets = append(sets, set{"device", all.Subset(seq(0, 400)), all.Subset(seq(400, 700)), 20, v})
	}
	// quantised features: many equal similarities, ties at the k-th
	r = rand.New(rand.NewPCG(11, 12))
	q := clusters(r, 900, 4, 6, 0.5)
	for i := range q.X {
		q.X[i] = float32(math.Round(float64(q.X[i])))
	}
	sets = append(sets, set{"quantised", q.Subset(seq(0, 600)), q.Subset(seq(600, 900)), 50, Weighted})
	for _, s := range sets {
		cfg := DefaultKNNConfig()
		cfg.K, cfg.Vote = s.k, s.vote
		want, wantPred := heapKNN(t, s.train, s.test, cfg)
		for _, dev := range []tensor.Device{tensor.CPU, hostless.FusedDevice, hostless.Device} {
			cfg.Device = dev
			got, err := KNN(s.train, s.test, cfg)
			if err != nil {
				t.Fatal(err)
			}
			pred, err := KNNPredict(s.train, s.test, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got != want || !slices.Equal(pred, wantPred) {
				t.Errorf("%s k=%d %s on %s: %+v, heap order %+v", s.name, s.k, s.vote, dev, got, want)
			}
		}
	}
}

// TestNeighboursMatchHeap: the neighbours knnScores votes with are the
// heap's set, sorted nearest first, on the CPU and on both host-less
// devices, for random similarities with many ties (k = 1, k = N, odd N).
func TestNeighboursMatchHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, tc := range [][3]int{{1, 1, 1}, {7, 5, 3}, {300, 17, 200}, {513, 3, 513}, {1000, 8, 64}} {
		n, d, k := tc[0], tc[1], tc[2]
		tr := &Features{N: n, D: d, X: make([]float32, n*d), Labels: make([]int32, n)}
		for i := range tr.X {
			tr.X[i] = float32(r.IntN(3) - 1) // many equal similarities
		}
		const m = 5
		qs := make([]float32, m*d)
		for i := range qs {
			qs[i] = float32(r.IntN(3) - 1)
		}
		sims := make([]float32, m*n)
		simFn, _ := similarities(tr)
		if err := simFn(sims, qs, m); err != nil {
			t.Fatal(err)
		}
		for _, dev := range []tensor.Device{tensor.CPU, hostless.FusedDevice, hostless.Device} {
			sel, err := neighbours(tr, dev, k)
			if err != nil {
				t.Fatal(err)
			}
			vals, idx := make([]float32, m*k), make([]int32, m*k)
			if err := sel(vals, idx, qs, m); err != nil {
				t.Fatal(err)
			}
			var h neighbourHeap
			for row := 0; row < m; row++ {
				h.topK(sims[row*n:(row+1)*n], k)
				want := append([]neighbour(nil), h...)
				slices.SortFunc(want, func(a, b neighbour) int {
					if farther(b, a) {
						return -1
					}
					if farther(a, b) {
						return 1
					}
					return 0
				})
				for j, nb := range want {
					if g := (neighbour{vals[row*k+j], int(idx[row*k+j])}); g != nb {
						t.Fatalf("n=%d k=%d on %s row %d: neighbour %d is %+v, heap %+v", n, k, dev, row, j, g, nb)
					}
				}
			}
		}
	}
}
