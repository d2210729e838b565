package analysis

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// blobs returns n rows of dimension d in k classes (row i in class i % k):
// class centres N(0, spread²) per coordinate plus unit noise.
func blobs(r *rand.Rand, n, d, k int, spread float64) ([]float32, []int32) {
	c := make([]float64, k*d)
	for i := range c {
		c[i] = spread * r.NormFloat64()
	}
	x := make([]float32, n*d)
	labels := make([]int32, n)
	for i := 0; i < n; i++ {
		labels[i] = int32(i % k)
		for j := 0; j < d; j++ {
			x[i*d+j] = float32(c[(i%k)*d+j] + r.NormFloat64())
		}
	}
	return x, labels
}

// oneNNAccuracy is the leave-one-out 1-nearest-neighbour accuracy of the
// 2-d embedding y.
func oneNNAccuracy(y []float64, labels []int32) float64 {
	n := len(labels)
	ok := 0
	for i := 0; i < n; i++ {
		best, bj := math.Inf(1), -1
		for j := 0; j < n; j++ {
			if j != i {
				d := math.Hypot(y[2*i]-y[2*j], y[2*i+1]-y[2*j+1])
				if d < best {
					best, bj = d, j
				}
			}
		}
		if labels[bj] == labels[i] {
			ok++
		}
	}
	return float64(ok) / float64(n)
}

func TestTSNEKeepsClustersApart(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x, labels := blobs(r, 300, 64, 6, 1)
	for _, init := range []TSNEInit{InitPCA, InitRandom} {
		cfg := DefaultTSNEConfig()
		cfg.Iterations, cfg.Init, cfg.Seed = 400, init, 3
		res, err := TSNE(x, 300, 64, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if acc := oneNNAccuracy(res.Y, labels); acc < 0.95 {
			t.Errorf("init %d: 1-NN accuracy in the embedding %v, expected >= 0.95", init, acc)
		}
		if !(res.KL > 0 && res.KL < 2) {
			t.Errorf("init %d: KL %v", init, res.KL)
		}
	}
}

func TestTSNEDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	x, _ := blobs(r, 200, 70, 4, 1) // more columns than PCADims
	cfg := DefaultTSNEConfig()
	cfg.Iterations, cfg.Init, cfg.Seed = 60, InitRandom, 7
	a, err := TSNE(x, 200, 70, cfg)
	if err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	b, _ := TSNE(x, 200, 70, cfg)
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(a.Y, b.Y) || a.KL != b.KL {
		t.Error("same seed, different embedding (1 CPU vs all)")
	}
	cfg.Seed = 8
	c, _ := TSNE(x, 200, 70, cfg)
	if slices.Equal(a.Y, c.Y) {
		t.Error("different seeds, same embedding")
	}
}

func TestConditionalRowPerplexity(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	n := 100
	dist := make([]float64, n)
	for j := range dist {
		dist[j] = 1e3 + 50*r.Float64() // large distances: exp would underflow without the shift
	}
	for _, perp := range []float64{2, 5, 30, 80} {
		row := make([]float64, n)
		conditionalRow(row, dist, 3, perp)
		var h, s float64
		for j, p := range row {
			if j == 3 && p != 0 {
				t.Errorf("p_i|i = %v", p)
			}
			s += p
			if p > 0 {
				h -= p * math.Log(p)
			}
		}
		if math.Abs(s-1) > 1e-9 || math.Abs(math.Exp(h)-perp) > 1e-3*perp {
			t.Errorf("perplexity %v: sum %v, got perplexity %v", perp, s, math.Exp(h))
		}
	}
}

func TestJointProbabilitiesSymmetric(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 40
	p := randomAffinities(r, n, 3, 10)
	var s float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s += p[i*n+j]
			if p[i*n+j] != p[j*n+i] || (i == j && p[i*n+j] != 0) {
				t.Fatalf("P[%d,%d] = %v, P[%d,%d] = %v", i, j, p[i*n+j], j, i, p[j*n+i])
			}
		}
	}
	if math.Abs(s-1) > 1e-9 {
		t.Errorf("sum of P = %v", s)
	}
}

// TestGradientFiniteDifference checks the fused gradient against central
// differences of KL(P‖Q) in float64 and, with early exaggeration α, against
// the plain formula 4 Σ_j (αP_ij − Q_ij) w_ij (y_i − y_j) (naiveGradient).
func TestGradientFiniteDifference(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	n := 130 // above the parallel threshold
	p := randomAffinities(r, n, 4, 8)
	y := normals(r, 2*n)
	for _, exag := range []float64{1, 12} {
		grad := make([]float64, 2*n)
		newGradient(n).compute(y, p, exag, grad)
		naive := naiveGradient(y, p, n, exag)
		for i := range grad {
			if math.Abs(naive[i]-grad[i]) > 1e-12+1e-9*math.Abs(naive[i]) {
				t.Fatalf("exaggeration %v: d/dy[%d] = %v, naive %v", exag, i, grad[i], naive[i])
			}
		}
		if exag != 1 {
			continue // the exaggerated update is not the gradient of a cost
		}
		// KL(P‖Q) = Σ P ln P - Σ P ln Q: the gradient of the first term is zero
		cost := func() float64 {
			var zs float64
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if i != j {
						zs += 1 / (1 + math.Pow(y[2*i]-y[2*j], 2) + math.Pow(y[2*i+1]-y[2*j+1], 2))
					}
				}
			}
			var c float64
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if i != j {
						w := 1 / (1 + math.Pow(y[2*i]-y[2*j], 2) + math.Pow(y[2*i+1]-y[2*j+1], 2))
						c -= p[i*n+j] * math.Log(w/zs)
					}
				}
			}
			return c
		}
		for _, idx := range []int{0, 1, 77, 2*n - 1} {
			h := 1e-5
			old := y[idx]
			y[idx] = old + h
			up := cost()
			y[idx] = old - h
			down := cost()
			y[idx] = old
			fd := (up - down) / (2 * h)
			if math.Abs(fd-grad[idx]) > 1e-6+1e-4*math.Abs(fd) {
				t.Errorf("exaggeration %v: d/dy[%d] = %v, finite difference %v", exag, idx, grad[idx], fd)
			}
		}
	}
}

func TestTSNESmallAndBad(t *testing.T) {
	for n := 0; n <= 4; n++ {
		x := make([]float32, n*3)
		for i := range x {
			x[i] = float32(i % 5)
		}
		res, err := TSNE(x, n, 3, TSNEConfig{Iterations: 20})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for _, v := range res.Y {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("n=%d: embedding %v", n, res.Y)
			}
		}
		if len(res.Y) != 2*n {
			t.Fatalf("n=%d: %d coordinates", n, len(res.Y))
		}
	}
	// identical rows
	if res, err := TSNE(make([]float32, 20*4), 20, 4, TSNEConfig{Iterations: 30}); err != nil || hasNaN(res.Y) {
		t.Errorf("identical rows: %v", err)
	}
	for _, tc := range []struct {
		name string
		x    []float32
		n, d int
		cfg  TSNEConfig
	}{
		{"short", make([]float32, 5), 2, 3, TSNEConfig{}},
		{"d0", nil, 0, 0, TSNEConfig{}},
		{"NaN", []float32{float32(math.NaN()), 0}, 1, 2, TSNEConfig{}},
		{"negative perplexity", make([]float32, 6), 3, 2, TSNEConfig{Perplexity: -1}},
		{"exaggeration below 1", make([]float32, 6), 3, 2, TSNEConfig{EarlyExaggeration: 0.5}},
		{"bad init", make([]float32, 6), 3, 2, TSNEConfig{Init: 9}},
	} {
		if _, err := TSNE(tc.x, tc.n, tc.d, tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func hasNaN(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return true
		}
	}
	return false
}

func TestPCA(t *testing.T) {
	// points on the line y = 2x (plus a constant third column): one component
	x := []float32{0, 0, 5, 1, 2, 5, 2, 4, 5, -1, -2, 5}
	z, err := PCA(x, 4, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	s5 := math.Sqrt(5)
	want := []float64{-0.5 * s5, 0.5 * s5, 1.5 * s5, -1.5 * s5} // centred at (0.5, 1)
	for i := range want {
		if math.Abs(z[2*i]-want[i]) > 1e-9 || math.Abs(z[2*i+1]) > 1e-9 {
			t.Errorf("row %d: %v %v, expected %v 0", i, z[2*i], z[2*i+1], want[i])
		}
	}
	if _, err := PCA(x, 4, 3, 4); err == nil {
		t.Error("k > d: no error")
	}
}

// naiveGradient is the plain peer of gradient.compute (scikit-learn's
// _kl_divergence): the matrix of w_ij, then Q, then one sum per row, on one
// goroutine.
func naiveGradient(y, p []float64, n int, exag float64) []float64 {
	w := make([]float64, n*n)
	var z float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				d0, d1 := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
				w[i*n+j] = 1 / (1 + d0*d0 + d1*d1)
				z += w[i*n+j]
			}
		}
	}
	grad := make([]float64, 2*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				c := 4 * (exag*p[i*n+j] - w[i*n+j]/z) * w[i*n+j]
				grad[2*i] += c * (y[2*i] - y[2*j])
				grad[2*i+1] += c * (y[2*i+1] - y[2*j+1])
			}
		}
	}
	return grad
}

// normals returns n standard normal values drawn from r.
func normals(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// randomAffinities returns the joint probabilities P (n x n) of n random
// normal points of dimension dim at the given perplexity.
func randomAffinities(r *rand.Rand, n, dim int, perplexity float64) []float64 {
	return jointProbabilities(squaredDistances(normals(r, n*dim), n, dim), n, perplexity)
}
