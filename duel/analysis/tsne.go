package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/duel-ssl/duel/internal/par"
)

// TSNEInit selects the initial embedding of t-SNE.
type TSNEInit int

const (
	// InitPCA starts from the first two principal components scaled so that
	// the first has standard deviation 1e-4 (scikit-learn's init="pca").
	InitPCA TSNEInit = iota
	// InitRandom starts from N(0, 1e-4²) coordinates drawn from Seed.
	InitRandom
)

// TSNEMethod selects how t-SNE computes its gradient.
type TSNEMethod int

const (
	// TSNEBarnesHut (the default, as scikit-learn's) takes P over each
	// point's ⌊3·perplexity+1⌋ nearest neighbours and the repulsion from a
	// quadtree of the embedding (van der Maaten 2014): O(N log N) an
	// iteration and O(N·perplexity) memory.
	TSNEBarnesHut TSNEMethod = iota
	// TSNEExact takes every pair: O(N²) time an iteration and memory.
	TSNEExact
)

// TSNEMethodNames lists the names ParseTSNEMethod accepts, the default
// first.
var TSNEMethodNames = []string{"barnes-hut", "exact"}

// String returns the method's name ("barnes-hut", "exact").
func (m TSNEMethod) String() string {
	if m >= 0 && int(m) < len(TSNEMethodNames) {
		return TSNEMethodNames[m]
	}
	return fmt.Sprintf("TSNEMethod(%d)", int(m))
}

// ParseTSNEMethod returns the method named s.
func ParseTSNEMethod(s string) (TSNEMethod, error) {
	for i, name := range TSNEMethodNames {
		if s == name {
			return TSNEMethod(i), nil
		}
	}
	return 0, fmt.Errorf("unknown t-SNE method %q (expected barnes-hut or exact)", s)
}

// TSNEConfig holds the settings of TSNE. Zero fields take the defaults of
// DefaultTSNEConfig.
type TSNEConfig struct {
	// Perplexity is the effective number of neighbours of each point (30).
	// It is lowered to (N-1)/3 for small N.
	Perplexity float64
	// Iterations of gradient descent in all (1000).
	Iterations int
	// LearningRate of the gradient descent; 0 means scikit-learn's "auto",
	// max(N / EarlyExaggeration / 4, 50).
	LearningRate float64
	// EarlyExaggeration multiplies P during the first ExaggerationIters
	// iterations (12 and 250), with momentum 0.5; momentum 0.8 after.
	EarlyExaggeration float64
	ExaggerationIters int
	// Init is InitPCA (default) or InitRandom.
	Init TSNEInit
	// Seed draws the random initialisation (InitRandom only).
	Seed uint64
	// PCADims: inputs of more columns are first projected on that many
	// principal components (50), as in the reference implementation; the
	// projection drops only the smallest variance directions.
	PCADims int
	// Method is TSNEBarnesHut (the default) or TSNEExact.
	Method TSNEMethod
	// Theta is Barnes-Hut's opening angle (0.5, scikit-learn's angle): a
	// quadtree cell whose width over its distance to the point is below
	// it repels as one body at its centre of mass. Smaller is closer to
	// the exact gradient and slower.
	Theta float64
	// Progress, when set, is called after each iteration with its number.
	Progress func(iter int)
}

// DefaultTSNEConfig returns perplexity 30, 1000 iterations, automatic
// learning rate, early exaggeration 12 for 250 iterations, PCA
// initialisation, a 50-component PCA of the input and Barnes-Hut with
// angle 0.5: scikit-learn's defaults.
func DefaultTSNEConfig() TSNEConfig {
	return TSNEConfig{Perplexity: 30, Iterations: 1000, EarlyExaggeration: 12, ExaggerationIters: 250, PCADims: 50, Theta: 0.5}
}

func (c *TSNEConfig) fill() {
	d := DefaultTSNEConfig()
	if c.Perplexity == 0 {
		c.Perplexity = d.Perplexity
	}
	if c.Iterations == 0 {
		c.Iterations = d.Iterations
	}
	if c.EarlyExaggeration == 0 {
		c.EarlyExaggeration = d.EarlyExaggeration
	}
	if c.ExaggerationIters == 0 {
		c.ExaggerationIters = d.ExaggerationIters
	}
	if c.PCADims == 0 {
		c.PCADims = d.PCADims
	}
	if c.Theta == 0 {
		c.Theta = d.Theta
	}
}

// TSNEResult is a two-dimensional embedding.
type TSNEResult struct {
	Y  []float64 // N x 2, row-major
	KL float64   // final Kullback-Leibler divergence KL(P‖Q) (without exaggeration)
	// Perplexity actually used (lowered for small N).
	Perplexity float64
}

// TSNE embeds the n rows of x (n x d, row-major) in two dimensions with
// t-SNE (van der Maaten and Hinton, 2008), following scikit-learn:
// squared Euclidean input distances, per-point Gaussian bandwidths found
// by binary search so that the conditional distribution has the requested
// perplexity (tolerance 1e-5 on the entropy in nats, at most 100 steps),
// symmetrised P, Student-t Q, and gradient descent with momentum and
// per-coordinate gains (delta-bar-delta, minimum gain 0.01). cfg.Method
// picks the gradient: Barnes-Hut (the default; P over the nearest
// neighbours, repulsion from a quadtree; O(n log n) an iteration) or exact
// (P_ij = (p_j|i + p_i|j) / 2N over every pair; O(n²) time and memory, for
// up to a few thousand points). The result depends only on x and cfg
// (also for the number of CPUs).
func TSNE(x []float32, n, d int, cfg TSNEConfig) (*TSNEResult, error) {
	cfg.fill()
	if n < 0 || d <= 0 || len(x) != n*d {
		return nil, fmt.Errorf("t-SNE: %d values for %d rows of dimension %d", len(x), n, d)
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("t-SNE: row %d column %d is %v, expected a finite value", i/d, i%d, v)
		}
	}
	if !(cfg.Perplexity > 0) || cfg.Iterations < 0 || !(cfg.EarlyExaggeration >= 1) || cfg.ExaggerationIters < 0 || cfg.LearningRate < 0 || cfg.PCADims < 0 || !(cfg.Theta > 0) || math.IsInf(cfg.Theta, 0) {
		return nil, fmt.Errorf("t-SNE: invalid settings %+v (expected perplexity > 0, early exaggeration >= 1, a finite angle > 0, non-negative counts and learning rate)", cfg)
	}
	if cfg.Method != TSNEBarnesHut && cfg.Method != TSNEExact {
		return nil, fmt.Errorf("t-SNE: unknown method %d", cfg.Method)
	}
	if cfg.Init != InitPCA && cfg.Init != InitRandom {
		return nil, fmt.Errorf("t-SNE: unknown init %d", cfg.Init)
	}
	res := &TSNEResult{Y: make([]float64, 2*n), Perplexity: math.Min(cfg.Perplexity, float64(n-1)/3)}
	if n < 2 {
		return res, nil
	}
	k := min(d, cfg.PCADims)
	z, err := PCA(x, n, d, k)
	if err != nil {
		return nil, fmt.Errorf("t-SNE: %w", err)
	}
	var gradient func(y []float64, exag float64, grad []float64)
	var kl func(y []float64) float64
	if cfg.Method == TSNEExact {
		p := jointProbabilities(squaredDistances(z, n, k), n, res.Perplexity)
		g := newGradient(n)
		gradient = func(y []float64, exag float64, grad []float64) { g.compute(y, p, exag, grad) }
		kl = func(y []float64) float64 { return klDivergence(y, p, n) }
	} else {
		p := sparseJointProbabilities(z, n, k, res.Perplexity)
		g := newBHGradient(n, cfg.Theta)
		gradient = func(y []float64, exag float64, grad []float64) { g.compute(y, p, exag, grad) }
		kl = func(y []float64) float64 { return g.kl(y, p) }
	}
	y := res.Y
	if cfg.Init == InitPCA && k >= 2 {
		var s0, s1 float64
		for i := 0; i < n; i++ {
			s0 += z[i*k]
			s1 += z[i*k] * z[i*k]
		}
		m := s0 / float64(n)
		std := math.Sqrt(math.Max(s1/float64(n)-m*m, 0))
		if std == 0 {
			std = 1
		}
		for i := 0; i < n; i++ {
			y[2*i] = z[i*k] / std * 1e-4
			y[2*i+1] = z[i*k+1] / std * 1e-4
		}
	} else {
		r := rand.New(rand.NewPCG(cfg.Seed, 0x74736e65))
		for i := range y {
			y[i] = 1e-4 * r.NormFloat64()
		}
	}
	lr := cfg.LearningRate
	if lr == 0 {
		lr = math.Max(float64(n)/cfg.EarlyExaggeration/4, 50)
	}
	grad := make([]float64, 2*n)
	update := make([]float64, 2*n)
	gains := make([]float64, 2*n)
	for i := range gains {
		gains[i] = 1
	}
	for it := 0; it < cfg.Iterations; it++ {
		exag, momentum := 1.0, 0.8
		if it < cfg.ExaggerationIters {
			exag, momentum = cfg.EarlyExaggeration, 0.5
		}
		gradient(y, exag, grad)
		for i := range y {
			if update[i]*grad[i] < 0 {
				gains[i] += 0.2
			} else {
				gains[i] = math.Max(gains[i]*0.8, 0.01)
			}
			update[i] = momentum*update[i] - lr*gains[i]*grad[i]
			y[i] += update[i]
		}
		if cfg.Progress != nil {
			cfg.Progress(it + 1)
		}
	}
	res.KL = kl(y)
	return res, nil
}

// squaredDistances returns the n x n matrix of squared Euclidean distances of
// the rows of z (n x k).
func squaredDistances(z []float64, n, k int) []float64 {
	dist := make([]float64, n*n)
	parallelRows(n, func(i int) {
		zi := z[i*k : (i+1)*k]
		for j := 0; j < n; j++ {
			dist[i*n+j] = squaredDistance(zi, z[j*k:(j+1)*k])
		}
	})
	return dist
}

// squaredDistance returns ‖a − b‖², summed in index order.
func squaredDistance(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		t := v - b[i]
		s += t * t
	}
	return s
}

// conditionalRow fills row (n values) with p_j|i ∝ exp(-β d_ij), p_i|i = 0,
// with β found by binary search so that the entropy of the row, in nats, is
// ln(perplexity) within 1e-5 (at most 100 steps, scikit-learn's
// _binary_search_perplexity). Distances are shifted by the row's smallest
// off-diagonal one, which leaves p unchanged and keeps exp from underflowing.
// It returns β.
func conditionalRow(row, dist []float64, i int, perplexity float64) float64 {
	target := math.Log(perplexity)
	dmin := math.Inf(1)
	for j, v := range dist {
		if j != i && v < dmin {
			dmin = v
		}
	}
	beta, lo, hi := 1.0, math.Inf(-1), math.Inf(1)
	for step := 0; step < 100; step++ {
		var sum, sumDP float64
		for j, v := range dist {
			if j == i {
				row[j] = 0
				continue
			}
			e := math.Exp(-(v - dmin) * beta)
			row[j] = e
			sum += e
			sumDP += (v - dmin) * e
		}
		h := math.Log(sum) + beta*sumDP/sum
		for j := range row {
			row[j] /= sum
		}
		diff := h - target
		if math.Abs(diff) <= 1e-5 {
			break
		}
		if diff > 0 { // too flat: sharpen
			lo = beta
			if math.IsInf(hi, 1) {
				beta *= 2
			} else {
				beta = (beta + hi) / 2
			}
		} else {
			hi = beta
			if math.IsInf(lo, -1) {
				beta /= 2
			} else {
				beta = (beta + lo) / 2
			}
		}
	}
	return beta
}

// jointProbabilities returns the symmetric P_ij = max((p_j|i + p_i|j) / 2n,
// 1e-12) for i ≠ j and 0 on the diagonal.
func jointProbabilities(dist []float64, n int, perplexity float64) []float64 {
	cond := make([]float64, n*n)
	parallelRows(n, func(i int) {
		conditionalRow(cond[i*n:(i+1)*n], dist[i*n:(i+1)*n], i, perplexity)
	})
	p := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				p[i*n+j] = math.Max((cond[i*n+j]+cond[j*n+i])/(2*float64(n)), 1e-12)
			}
		}
	}
	return p
}

// gradient computes the t-SNE gradient in one pass over the pairs, split by
// rows over the CPUs. With w_ij = 1/(1+‖y_i−y_j‖²), Z = Σ_{k≠l} w_kl and
// Q_ij = w_ij / Z, the gradient of KL(αP‖Q) (α the exaggeration) is
//
//	∂C/∂y_i = 4 Σ_j (αP_ij − Q_ij) w_ij (y_i − y_j)
//	        = 4 (α Σ_j P_ij w_ij (y_i−y_j) − (1/Z) Σ_j w_ij² (y_i−y_j)),
//
// so each row needs its two sums and its share of Z, added in row order
// (the result does not depend on the number of goroutines).
type gradient struct {
	n       int
	attract []float64 // n x 2
	repulse []float64 // n x 2
	rowZ    []float64 // n
}

func newGradient(n int) *gradient {
	return &gradient{n: n, attract: make([]float64, 2*n), repulse: make([]float64, 2*n), rowZ: make([]float64, n)}
}

func (g *gradient) compute(y, p []float64, exag float64, grad []float64) {
	n := g.n
	parallelRows(n, func(i int) {
		yi0, yi1 := y[2*i], y[2*i+1]
		pi := p[i*n : (i+1)*n]
		var a0, a1, r0, r1, z float64
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			d0, d1 := yi0-y[2*j], yi1-y[2*j+1]
			w := 1 / (1 + d0*d0 + d1*d1)
			z += w
			pw := pi[j] * w
			a0 += pw * d0
			a1 += pw * d1
			ww := w * w
			r0 += ww * d0
			r1 += ww * d1
		}
		g.attract[2*i], g.attract[2*i+1] = a0, a1
		g.repulse[2*i], g.repulse[2*i+1] = r0, r1
		g.rowZ[i] = z
	})
	var z float64
	for _, v := range g.rowZ {
		z += v
	}
	for i := range grad {
		grad[i] = 4 * (exag*g.attract[i] - g.repulse[i]/z)
	}
}

// klDivergence returns KL(P‖Q) = Σ_{i≠j} P_ij ln(P_ij / Q_ij) of the
// embedding y.
func klDivergence(y, p []float64, n int) float64 {
	var z float64
	w := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				d0, d1 := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
				w[i*n+j] = 1 / (1 + d0*d0 + d1*d1)
				z += w[i*n+j]
			}
		}
	}
	var kl float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				q := math.Max(w[i*n+j]/z, 1e-12)
				kl += p[i*n+j] * math.Log(p[i*n+j]/q)
			}
		}
	}
	return kl
}

// parallelChunks calls f on contiguous chunks of [0, n), of at least
// grain rows each, perCPU chunks a CPU at most (several when rows cost
// unequal work), on as many goroutines (on the caller's alone for small
// n).
func parallelChunks(n, grain, perCPU int, f func(lo, hi int)) {
	par.For(n, min(perCPU*runtime.GOMAXPROCS(0), n/grain), f)
}

// parallelRows calls f(i) for every i in [0, n), in contiguous chunks on up
// to GOMAXPROCS goroutines (on the caller's alone for small n).
func parallelRows(n int, f func(i int)) {
	par.For(n, min(runtime.GOMAXPROCS(0), n/64), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(i)
		}
	})
}
