package eval

import (
	"math"
	"math/rand/v2"
	"sort"
)

// clusters returns n rows of dimension d in the given number of classes: row
// i has class i % classes and is its class centre (norm about spread*sqrt(d))
// plus unit Gaussian noise.
func clusters(r *rand.Rand, n, d, classes int, spread float64) *Features {
	centres := make([]float64, classes*d)
	for i := range centres {
		centres[i] = spread * r.NormFloat64()
	}
	f := &Features{N: n, D: d, X: make([]float32, n*d), Labels: make([]int32, n)}
	for i := 0; i < n; i++ {
		c := i % classes
		f.Labels[i] = int32(c)
		for j := 0; j < d; j++ {
			f.X[i*d+j] = float32(centres[c*d+j] + r.NormFloat64())
		}
	}
	return f
}

// shuffledLabels returns a copy of f with labels drawn uniformly at random.
func shuffledLabels(r *rand.Rand, f *Features, classes int) *Features {
	g := *f
	g.Labels = make([]int32, f.N)
	for i := range g.Labels {
		g.Labels[i] = int32(r.IntN(classes))
	}
	return &g
}

// naiveKNNScores is the plain-loop peer of knnScores: float64 dot products of
// normalised rows, a full sort of every training row, then the vote.
func naiveKNNScores(train, test *Features, cfg KNNConfig, classes int) [][]float64 {
	norm := func(v []float32) []float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		inv := 1 / math.Max(math.Sqrt(s), 1e-12)
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x) * inv
		}
		return out
	}
	tr := make([][]float64, train.N)
	for i := range tr {
		tr[i] = norm(train.Row(i))
	}
	k := min(cfg.K, train.N)
	out := make([][]float64, test.N)
	type nb struct {
		sim float64
		idx int
	}
	for i := 0; i < test.N; i++ {
		q := norm(test.Row(i))
		all := make([]nb, train.N)
		for j, t := range tr {
			var s float64
			for c := range q {
				s += q[c] * t[c]
			}
			all[j] = nb{s, j}
		}
		sort.SliceStable(all, func(a, b int) bool { return all[a].sim > all[b].sim })
		sc := make([]float64, classes)
		for _, n := range all[:k] {
			w := 1.0
			if cfg.Vote == Weighted {
				w = math.Exp(n.sim / cfg.Temperature)
			}
			sc[train.Labels[n.idx]] += w
		}
		out[i] = sc
	}
	return out
}
