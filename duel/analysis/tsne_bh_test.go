package analysis

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// denseOf expands p to an n x n matrix.
func denseOf(p *sparseP, n int) []float64 {
	out := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for e := p.ptr[i]; e < p.ptr[i+1]; e++ {
			out[i*n+int(p.col[e])] = p.val[e]
		}
	}
	return out
}

func TestSparseJointProbabilities(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		n, d       int
		perplexity float64
	}{{40, 5, 5}, {100, 7, 10}, {12, 3, 30}, {2, 2, 1}} {
		z := normals(r, tc.n*tc.d)
		perp := math.Min(tc.perplexity, float64(tc.n-1)/3)
		p := sparseJointProbabilities(z, tc.n, tc.d, perp)
		dense := denseOf(p, tc.n)
		var sum float64
		for i := 0; i < tc.n; i++ {
			if !slices.IsSorted(p.col[p.ptr[i]:p.ptr[i+1]]) {
				t.Fatalf("n %d: row %d's columns not sorted", tc.n, i)
			}
			for j := 0; j < tc.n; j++ {
				v := dense[i*tc.n+j]
				if v < 0 || (i == j && v != 0) || math.Abs(v-dense[j*tc.n+i]) > 1e-15 {
					t.Fatalf("n %d: P[%d][%d] = %v, P[%d][%d] = %v", tc.n, i, j, v, j, i, dense[j*tc.n+i])
				}
				sum += v
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("n %d: ΣP = %v", tc.n, sum)
		}
		// With every other point a neighbour, P is the exact method's.
		if neighbourCount(tc.n, perp) == tc.n-1 {
			exact := jointProbabilities(squaredDistances(z, tc.n, tc.d), tc.n, perp)
			for i := range exact {
				if math.Abs(exact[i]-dense[i]) > 1e-12+1e-9*exact[i] {
					t.Fatalf("n %d: P[%d] = %v, exact method %v", tc.n, i, dense[i], exact[i])
				}
			}
		}
	}
}

func TestNearestNeighbours(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const n, d, k = 150, 4, 9
	z := normals(r, n*d)
	z[5*d], z[5*d+1], z[5*d+2], z[5*d+3] = z[7*d], z[7*d+1], z[7*d+2], z[7*d+3] // a tie at distance 0
	idx, dist := nearestNeighbours(z, n, d, k)
	full := squaredDistances(z, n, d)
	for i := 0; i < n; i++ {
		order := make([]int, 0, n-1)
		for j := 0; j < n; j++ {
			if j != i {
				order = append(order, j)
			}
		}
		slices.SortFunc(order, func(a, b int) int {
			if c := cmp.Compare(full[i*n+a], full[i*n+b]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		for a := 0; a < k; a++ {
			if int(idx[i*k+a]) != order[a] || dist[i*k+a] != full[i*n+order[a]] {
				t.Fatalf("row %d neighbour %d: %d at %v, want %d at %v", i, a, idx[i*k+a], dist[i*k+a], order[a], full[i*n+order[a]])
			}
		}
	}
}

func TestSelectSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for trial := 0; trial < 300; trial++ {
		n := r.IntN(40) + 1
		v := make([]int, n)
		for i := range v {
			v[i] = r.IntN(8) // many repeats
		}
		k := r.IntN(n + 1)
		sorted := slices.Sorted(slices.Values(v))
		selectSmallest(v, k, cmp.Compare[int])
		got := slices.Sorted(slices.Values(v[:k]))
		if !slices.Equal(got, sorted[:k]) {
			t.Fatalf("n %d k %d: first k %v, want %v", n, k, got, sorted[:k])
		}
	}
}

func TestQuadTree(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	y := normals(r, 2*300)
	copy(y[20:24], []float64{1, 1, 1, 1})                                       // points 10 and 11 at one place
	copy(y[40:44], []float64{0.5, 0.5, 0.5, 0.5 + math.SmallestNonzeroFloat64}) // 20 and 21 closer than the tree resolves
	var tr quadTree
	tr.build(y)
	root := tr.nodes[0]
	if root.count != 300 {
		t.Fatalf("root count %v", root.count)
	}
	// Every point in its leaf, every leaf's list consistent with leafOf,
	// and every cell's count the sum of its children's.
	inLeaf := 0
	for nd, c := range tr.nodes {
		if c.child < 0 {
			for p := c.head; p >= 0; p = tr.next[p] {
				if tr.leafOf[p] != int32(nd) {
					t.Fatalf("point %d listed in leaf %d, leafOf %d", p, nd, tr.leafOf[p])
				}
				px, py := y[2*p], y[2*p+1]
				if math.Abs(px-c.cx) > c.half || math.Abs(py-c.cy) > c.half {
					t.Fatalf("point %d (%v, %v) outside its leaf %+v", p, px, py, c)
				}
				inLeaf++
			}
			continue
		}
		var cnt float64
		for q := c.child; q < c.child+4; q++ {
			cnt += tr.nodes[q].count
		}
		if cnt != c.count {
			t.Fatalf("cell %d counts %v, its children %v", nd, c.count, cnt)
		}
	}
	if inLeaf != 300 {
		t.Fatalf("%d points in leaves", inLeaf)
	}
	if tr.leafOf[10] != tr.leafOf[11] || tr.leafOf[20] != tr.leafOf[21] {
		t.Error("coincident points in different leaves")
	}
	// Rebuilding reuses the storage and gives the same tree.
	before := slices.Clone(tr.nodes)
	tr.build(y)
	if !slices.Equal(before, tr.nodes) {
		t.Error("rebuilt tree differs")
	}
}

// TestBHGradient checks the Barnes-Hut gradient against the exact one on
// the same P: equal (to rounding) when every cell is opened, close at the
// default angle; and the tree's KL against the exact KL.
func TestBHGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	for _, n := range []int{2, 3, 90, 400} {
		d := 6
		z := normals(r, n*d)
		perp := math.Min(10, float64(n-1)/3)
		p := sparseJointProbabilities(z, n, d, perp)
		dense := denseOf(p, n)
		y := normals(r, 2*n)
		copy(y[0:2], y[2:4]) // two points at one place
		for _, exag := range []float64{1, 12} {
			want := naiveGradient(y, dense, n, exag)
			for _, theta := range []float64{0, 0.5} {
				got := make([]float64, 2*n)
				newBHGradient(n, theta).compute(y, p, exag, got)
				var diff, norm float64
				for i := range got {
					diff += (got[i] - want[i]) * (got[i] - want[i])
					norm += want[i] * want[i]
				}
				rel := math.Sqrt(diff / norm)
				if tol := map[float64]float64{0: 1e-12, 0.5: 0.05}[theta]; rel > tol {
					t.Errorf("n %d exaggeration %v angle %v: relative error %.3g against the exact gradient, expected <= %g", n, exag, theta, rel, tol)
				}
			}
		}
		g := newBHGradient(n, 0)
		if got, want := g.kl(y, p), klDivergence(y, dense, n); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("n %d: tree KL %v, exact %v", n, got, want)
		}
	}
}

// TestTSNEMethodsAgree embeds the same clusters both ways: both separate
// them, with KL divergences within 10% of each other.
func TestTSNEMethodsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	x, labels := blobs(r, 400, 30, 5, 1)
	var kl [2]float64
	for m := range kl {
		cfg := DefaultTSNEConfig()
		cfg.Iterations, cfg.Method = 500, TSNEMethod(m)
		res, err := TSNE(x, 400, 30, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if acc := oneNNAccuracy(res.Y, labels); acc < 0.95 {
			t.Errorf("%v: 1-NN accuracy %v", TSNEMethod(m), acc)
		}
		kl[m] = res.KL
	}
	if math.Abs(kl[0]-kl[1]) > 0.1*kl[1] {
		t.Errorf("KL: Barnes-Hut %v, exact %v", kl[0], kl[1])
	}
}

func TestParseTSNEMethod(t *testing.T) {
	for i, name := range TSNEMethodNames {
		m, err := ParseTSNEMethod(name)
		if err != nil || int(m) != i || m.String() != name {
			t.Errorf("%s: %v %v", name, m, err)
		}
	}
	if _, err := ParseTSNEMethod("fast"); err == nil {
		t.Error("unknown method accepted")
	}
	for _, cfg := range []TSNEConfig{{Method: 7}, {Theta: -1}, {Theta: math.Inf(1)}, {Theta: math.NaN()}} {
		if _, err := TSNE(make([]float32, 8), 4, 2, cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// TestTopEigenvectors checks the tridiagonal path against gonum's
// EigenSym: the same vectors for distinct eigenvalues, and orthonormal
// eigenvectors for repeated ones (where any basis of the eigenspace is
// right).
func TestTopEigenvectors(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	sym := func(d int, vals []float64) []float64 {
		// q diag(vals) qᵀ with q a random orthogonal matrix (Gram-Schmidt).
		q := make([][]float64, d)
		for i := range q {
			q[i] = normals(r, d)
			for _, p := range q[:i] {
				floats.AddScaled(q[i], -floats.Dot(q[i], p), p)
			}
			normalize(q[i])
		}
		a := make([]float64, d*d)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				for m, v := range vals {
					a[i*d+j] += q[m][i] * v * q[m][j]
				}
			}
		}
		return a
	}
	spread := func(d int) []float64 {
		v := make([]float64, d)
		for i := range v {
			v[i] = float64(i+1) * (1 + 0.1*r.Float64())
		}
		return v
	}
	repeated := func(d int) []float64 {
		v := make([]float64, d)
		for i := range v {
			v[i] = float64(i % 3) // three eigenspaces, zero included
		}
		return v
	}
	for _, tc := range []struct {
		name string
		d, k int
		vals []float64
		same bool
	}{
		{"distinct", 60, 7, spread(60), true},
		{"all", 9, 9, spread(9), true},
		{"one", 1, 1, []float64{3}, true},
		{"repeated", 30, 25, repeated(30), false},
		{"zero", 8, 3, make([]float64, 8), false},
	} {
		a := sym(tc.d, tc.vals)
		got, ok := tridiagonalTop(a, tc.d, tc.k)
		if !ok {
			t.Fatalf("%s: did not converge", tc.name)
		}
		want, err := eigenSymTop(a, tc.d, tc.k)
		if err != nil {
			t.Fatal(err)
		}
		sorted := slices.Sorted(slices.Values(tc.vals))
		for c := 0; c < tc.k; c++ {
			lambda := sorted[tc.d-1-c]
			for j := 0; j < tc.d; j++ {
				// a v = λ v
				var av float64
				for m := 0; m < tc.d; m++ {
					av += a[j*tc.d+m] * got.At(m, c)
				}
				if math.Abs(av-lambda*got.At(j, c)) > 1e-9*math.Max(1, sorted[tc.d-1]) {
					t.Fatalf("%s: column %d is not an eigenvector of %v", tc.name, c, lambda)
				}
				if tc.same && math.Abs(got.At(j, c)-want.At(j, c)) > 1e-9 {
					t.Fatalf("%s: column %d [%d] = %v, EigenSym %v", tc.name, c, j, got.At(j, c), want.At(j, c))
				}
			}
			for c2 := 0; c2 <= c; c2++ {
				var s float64
				for j := 0; j < tc.d; j++ {
					s += got.At(j, c) * got.At(j, c2)
				}
				if want := map[bool]float64{true: 1, false: 0}[c == c2]; math.Abs(s-want) > 1e-9 {
					t.Fatalf("%s: columns %d and %d: dot %v", tc.name, c, c2, s)
				}
			}
		}
	}
}
