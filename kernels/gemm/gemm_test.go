package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// refSgemm is the float64 reference: it returns alpha*op(A)*op(B)+beta*C and,
// per element, the error scale |alpha|*sum|a||b| + |beta*c|.
func refSgemm(p problem) (want, scale []float64) {
	want = make([]float64, p.m*p.n)
	scale = make([]float64, p.m*p.n)
	// op(A) row by row and op(B) column by column, in float64.
	at := make([]float64, p.m*p.k)
	bt := make([]float64, p.n*p.k)
	for i := 0; i < p.m; i++ {
		for l := 0; l < p.k; l++ {
			if p.transA {
				at[i*p.k+l] = float64(p.a[l*p.lda+i])
			} else {
				at[i*p.k+l] = float64(p.a[i*p.lda+l])
			}
		}
	}
	for j := 0; j < p.n; j++ {
		for l := 0; l < p.k; l++ {
			if p.transB {
				bt[j*p.k+l] = float64(p.b[j*p.ldb+l])
			} else {
				bt[j*p.k+l] = float64(p.b[l*p.ldb+j])
			}
		}
	}
	for i := 0; i < p.m; i++ {
		ar := at[i*p.k : i*p.k+p.k]
		for j := 0; j < p.n; j++ {
			br := bt[j*p.k : j*p.k+p.k]
			var s, abs float64
			for l, av := range ar {
				s += av * br[l]
				abs += math.Abs(av * br[l])
			}
			w := float64(p.alpha) * s
			sc := math.Abs(float64(p.alpha)) * abs
			if p.beta != 0 {
				cv := float64(p.c[i*p.ldc+j])
				w += float64(p.beta) * cv
				sc += math.Abs(float64(p.beta) * cv)
			}
			want[i*p.n+j], scale[i*p.n+j] = w, sc
		}
	}
	return want, scale
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 2*r.Float32() - 1
	}
	return s
}

// newProblem builds a random problem; pad is added to every minimal stride.
func newProblem(r *rand.Rand, tA, tB bool, m, n, k, pad int, alpha, beta float32) problem {
	ra, ca := m, k
	if tA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if tB {
		rb, cb = n, k
	}
	lda, ldb, ldc := max(1, ca)+pad, max(1, cb)+pad, max(1, n)+pad
	c := randSlice(r, max(0, m*ldc))
	if beta == 0 {
		for i := range c {
			c[i] = float32(math.NaN())
		}
	}
	// Slices end exactly at the last element, to catch reads past it.
	trim := func(rows, cols, ld int, s []float32) []float32 {
		if rows == 0 || cols == 0 {
			return s[:0]
		}
		return s[:(rows-1)*ld+cols]
	}
	return problem{tA, tB, m, n, k, alpha,
		trim(ra, ca, lda, randSlice(r, ra*lda)), lda,
		trim(rb, cb, ldb, randSlice(r, rb*ldb)), ldb,
		beta, trim(m, n, ldc, c), ldc, nil}
}

// checkProblem runs p with kernel kn and compares with the reference.
func checkProblem(t *testing.T, kn *kernel, p problem) {
	t.Helper()
	want, scale := refSgemm(p)
	checkAgainst(t, kn, p, want, scale)
}

// checkAgainst runs p with kernel kn, threaded (as Sgemm) and on one
// thread (as SgemmSerial), and compares both with want (see refSgemm).
func checkAgainst(t *testing.T, kn *kernel, p problem, want, scale []float64) {
	t.Helper()
	checkThreads(t, kn, p, want, scale, runtime.GOMAXPROCS(0))
	checkThreads(t, kn, p, want, scale, 1)
}

// checkThreads runs p with kernel kn on at most threads threads and
// compares with want.
func checkThreads(t *testing.T, kn *kernel, p problem, want, scale []float64, threads int) {
	t.Helper()
	checkAdjusted(t, kn, p, want, scale, threads, nil)
}

// checkAdjusted is checkThreads with the call adjusted (see sgemmAdjusted).
func checkAdjusted(t *testing.T, kn *kernel, p problem, want, scale []float64, threads int, adjust func(*call)) {
	t.Helper()
	orig := append([]float32(nil), p.c...)
	in := p
	in.c = append([]float32(nil), p.c...)
	sgemmAdjusted(kn, in, threads, adjust)
	const tol = 1e-5
	bad := 0
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.ldc && i*p.ldc+j < len(in.c); j++ {
			got := in.c[i*p.ldc+j]
			if j >= p.n {
				// Padding between rows must be untouched.
				if math.Float32bits(got) != math.Float32bits(orig[i*p.ldc+j]) {
					t.Errorf("threads %d: C[%d,%d] (padding) changed from %v to %v", threads, i, j, orig[i*p.ldc+j], got)
					bad++
				}
				continue
			}
			w, s := want[i*p.n+j], scale[i*p.n+j]
			if d := math.Abs(float64(got) - w); !(d <= tol*s+1e-30) {
				t.Errorf("threads %d: C[%d,%d] = %v, want %v (error %.3g, scale %.3g)", threads, i, j, got, w, d, s)
				bad++
			}
			if bad >= 10 {
				t.Fatalf("too many errors")
			}
		}
	}
}

func forKernels(t *testing.T, f func(t *testing.T, kn *kernel)) {
	for _, kn := range available {
		t.Run(kn.name, func(t *testing.T) { f(t, kn) })
	}
}

// TestMicroKernels checks each micro-kernel alone against the generic one's
// definition, including kc = 0 and beta = 0 over NaNs.
func TestMicroKernels(t *testing.T) {
	forKernels(t, func(t *testing.T, kn *kernel) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, kc := range []int{0, 1, 2, 3, 4, 5, 7, 8, 17, 64, 385} {
			for _, beta := range []float32{0, 1, -0.5} {
				ldb := kn.nr
				if beta == 1 {
					ldb = kn.nr + 5 // a panel of B read in place
				}
				a, b := randSlice(r, kc*kn.mr), randSlice(r, kc*ldb)
				ldc := kn.nr + 3
				c := randSlice(r, kn.mr*ldc)
				if beta == 0 {
					for i := range c {
						c[i] = float32(math.NaN())
					}
				}
				orig := append([]float32(nil), c...)
				var ap, bp *float32
				if kc > 0 {
					ap, bp = &a[0], &b[0]
				} else {
					ap, bp = new(float32), new(float32)
				}
				lda := kc + 3
				aRows := make([]float32, kn.mr*lda) // A in place: a[i*lda+p]
				for p := 0; p < kc; p++ {
					for i := 0; i < kn.mr; i++ {
						aRows[i*lda+p] = a[p*kn.mr+i]
					}
				}
				if kn.microDirectA != nil && beta != 0 && kc > 0 {
					kn.microDirectA(kc, &aRows[0], bp, &c[0], lda, ldb, ldc, beta)
				} else {
					kn.micro(kc, ap, bp, &c[0], ldb, ldc, beta)
				}
				for i := 0; i < kn.mr; i++ {
					for j := 0; j < ldc; j++ {
						got := c[i*ldc+j]
						if j >= kn.nr {
							if math.Float32bits(got) != math.Float32bits(orig[i*ldc+j]) {
								t.Fatalf("kc=%d: C[%d,%d] outside the tile changed", kc, i, j)
							}
							continue
						}
						var w, s float64
						for p := 0; p < kc; p++ {
							w += float64(a[p*kn.mr+i]) * float64(b[p*ldb+j])
							s += math.Abs(float64(a[p*kn.mr+i]) * float64(b[p*ldb+j]))
						}
						if beta != 0 {
							w += float64(beta) * float64(orig[i*ldc+j])
							s += math.Abs(float64(beta) * float64(orig[i*ldc+j]))
						}
						if d := math.Abs(float64(got) - w); !(d <= 1e-5*s+1e-30) {
							t.Fatalf("kc=%d beta=%v: C[%d,%d] = %v, want %v", kc, beta, i, j, got, w)
						}
					}
				}
			}
		}
	})
}

// TestSgemmShapes covers odd, tiny and zero sizes, all transpositions,
// padded strides and several alpha/beta values.
func TestSgemmShapes(t *testing.T) {
	sizes := []int{0, 1, 2, 3, 7, 15, 17, 31, 33}
	forKernels(t, func(t *testing.T, kn *kernel) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, m := range sizes {
					for _, n := range sizes {
						for _, k := range sizes {
							ab := [][2]float32{{1, 0}, {-0.5, 1.5}, {2, 1}, {0, 0.5}}[r.IntN(4)]
							pad := r.IntN(3)
							p := newProblem(r, tA, tB, m, n, k, pad, ab[0], ab[1])
							name := fmt.Sprintf("tA=%v,tB=%v,m=%d,n=%d,k=%d,pad=%d,alpha=%v,beta=%v", tA, tB, m, n, k, pad, ab[0], ab[1])
							t.Run(name, func(t *testing.T) { checkProblem(t, kn, p) })
						}
					}
				}
			}
		}
	})
}

// TestSgemmLarge crosses every blocking boundary (mc, kc, nc) and exercises
// both ways of splitting the work between threads.
func TestSgemmLarge(t *testing.T) {
	shapes := []struct {
		m, n, k, pad int
		alpha, beta  float32
	}{
		{300, 257, 513, 5, 1, 0},
		{300, 257, 513, 0, -1.5, 0.5},
		{20, 700, 300, 3, 1, 1},      // few rows: threads split the columns
		{700, 20, 300, 1, 0.5, 0},    // few columns
		{17, 4200, 33, 2, 1, 0.25},   // crosses nc
		{1000, 3, 1000, 0, 1, 0},     // thin
		{180, 180, 180, 0, 1, -1},    // just above the threading threshold
		{2, 2, 2000, 0, 1, 0},        // long k, tiny tile
		{29, 45, 1153, 1, 0.75, 0.5}, // several kc slices with edge tiles
		{64, 200, 1000, 3, 1, 0.5},   // B read in place (few rows, alpha 1)
		{100, 97, 800, 0, 1, 0},      // B read in place, edge panels packed
		{1000, 64, 700, 2, 1, 0.5},   // A read in place (few columns, alpha 1)
		{45, 100, 500, 0, 1, 0},      // A read in place, threads split the columns
		{60, 130, 16200, 0, 1, 0.5},  // B larger than rowsOnlyMaxB: block by block
		{2100, 70, 300, 1, 1, 0},     // large row chunks: B packed by each thread (transposed B)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				p := newProblem(r, tA, tB, s.m, s.n, s.k, s.pad, s.alpha, s.beta)
				want, scale := refSgemm(p)
				for _, kn := range available {
					name := fmt.Sprintf("%s/tA=%v,tB=%v,%dx%dx%d", kn.name, tA, tB, s.m, s.n, s.k)
					t.Run(name, func(t *testing.T) { checkAgainst(t, kn, p, want, scale) })
				}
			}
		}
	}
}

// TestSgemmZeroK checks that k = 0 and alpha = 0 only scale C by beta.
func TestSgemmZeroK(t *testing.T) {
	for _, tc := range []struct {
		k           int
		alpha, beta float32
	}{{0, 1, 0}, {0, 1, 2}, {0, 1, 1}, {5, 0, 0}, {5, 0, -3}} {
		c := []float32{1, 2, 3, 4, 5, 6, 99}
		if tc.beta == 0 {
			c[0] = float32(math.NaN())
		}
		a, b := make([]float32, 2*max(tc.k, 1)), make([]float32, 3*max(tc.k, 1))
		Sgemm(false, false, 2, 3, tc.k, tc.alpha, a, max(tc.k, 1), b, 3, tc.beta, c, 3)
		for i, v := range c[:6] {
			if want := tc.beta * float32(i+1); v != want && !(tc.beta == 0 && v == 0) {
				t.Errorf("k=%d alpha=%v beta=%v: C[%d] = %v, want %v", tc.k, tc.alpha, tc.beta, i, v, want)
			}
		}
		if c[6] != 99 {
			t.Errorf("element past C changed")
		}
	}
	// m or n = 0 touches nothing and accepts empty slices.
	Sgemm(false, false, 0, 3, 4, 1, nil, 4, make([]float32, 12), 3, 0, nil, 3)
	Sgemm(true, true, 3, 0, 4, 1, make([]float32, 12), 3, nil, 4, 0, nil, 1)
}

// TestL1Crowding checks the cache-set count that guards reading A in place.
func TestL1Crowding(t *testing.T) {
	for _, tc := range []struct{ ld, rows, want int }{
		{576, 14, 1}, {1024, 14, 14}, {2304, 14, 4}, {4608, 14, 7}, {16, 14, 1}, {1, 14, 1},
	} {
		if got := l1Crowding(tc.ld, tc.rows); got != tc.want {
			t.Errorf("l1Crowding(%d, %d) = %d, want %d", tc.ld, tc.rows, got, tc.want)
		}
	}
}

// TestSgemmPanics checks the argument checks.
func TestSgemmPanics(t *testing.T) {
	s := make([]float32, 12)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"negative m", func() { Sgemm(false, false, -1, 3, 4, 1, s, 4, s, 3, 0, s, 3) }},
		{"small lda", func() { Sgemm(false, false, 3, 3, 4, 1, s, 3, s, 3, 0, s, 3) }},
		{"small ldb transposed", func() { Sgemm(false, true, 3, 3, 4, 1, s, 4, s, 3, 0, s, 3) }},
		{"small ldc", func() { Sgemm(false, false, 3, 3, 4, 1, s, 4, s, 3, 0, s, 2) }},
		{"short A", func() { Sgemm(false, false, 3, 3, 4, 1, s[:11], 4, s, 3, 0, s, 3) }},
		{"short C", func() { Sgemm(false, false, 4, 3, 3, 1, s, 3, s, 3, 0, s[:11], 3) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

// TestSgemmConcurrent runs parallel-sized calls from several goroutines at once.
func TestSgemmConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var ps []problem
	for i := 0; i < 6; i++ {
		ps = append(ps, newProblem(r, i%2 == 0, i%3 == 0, 200+i, 190, 210, 0, 1, 0))
	}
	want := make([][]float32, len(ps))
	for i, p := range ps {
		want[i] = make([]float32, len(p.c))
		q := p
		q.c = want[i]
		sgemm(active, q, runtime.GOMAXPROCS(0))
	}
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := 0; rep < 5; rep++ {
				q := p
				q.c = make([]float32, len(p.c))
				sgemm(active, q, runtime.GOMAXPROCS(0))
				for j := range q.c {
					if q.c[j] != want[i][j] {
						t.Errorf("problem %d: concurrent result differs at %d", i, j)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestSgemmNoAllocs checks that steady-state calls allocate nothing.
func TestSgemmNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{16, 200} {
		p := newProblem(r, false, false, n, n, n, 0, 1, 0)
		Sgemm(false, false, n, n, n, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
		allocs := testing.AllocsPerRun(20, func() {
			Sgemm(false, false, n, n, n, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
		})
		if allocs > 0.5 {
			t.Errorf("n=%d: %.1f allocations per call, want 0", n, allocs)
		}
	}
}

// TestChoose checks the DUEL_ISA override and its fallbacks.
func TestChoose(t *testing.T) {
	g := &kernel{name: "generic"}
	a2 := &kernel{name: "avx2"}
	a5 := &kernel{name: "avx512"}
	ne := &kernel{name: "neon"}
	all, noavx512, none, arm := []*kernel{a5, a2, g}, []*kernel{a2, g}, []*kernel{g}, []*kernel{ne, g}
	for _, tc := range []struct {
		ks   []*kernel
		want string
		got  *kernel
	}{
		{all, "", a5}, {all, "avx512", a5}, {all, "AVX2", a2}, {all, "generic", g}, {all, "sse", a5},
		{noavx512, "avx512", a2}, {noavx512, "", a2},
		{none, "avx512", g}, {none, "avx2", g}, {none, "", g},
		{arm, "", ne}, {arm, "neon", ne}, {arm, "NEON", ne}, {arm, "generic", g}, {arm, "avx512", ne}, {arm, "avx2", ne},
		{all, "neon", a2}, // never asked on x86: cpu.ISA turns DUEL_ISA=neon into generic there
	} {
		if k := choose(tc.ks, tc.want); k != tc.got {
			t.Errorf("choose(%d kernels, %q) = %s, want %s", len(tc.ks), tc.want, k.name, tc.got.name)
		}
	}
	if ISA() != active.name || Threads() < 1 {
		t.Errorf("ISA() = %q, Threads() = %d", ISA(), Threads())
	}
}

// TestSgemmSerialMatchesSgemm checks that the exported single-threaded entry
// point gives Sgemm's result bit for bit on a parallel-sized problem.
func TestSgemmSerialMatchesSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		p := newProblem(r, tr[0], tr[1], 230, 300, 250, 3, 1, 0.5)
		c1 := append([]float32(nil), p.c...)
		c2 := append([]float32(nil), p.c...)
		Sgemm(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, c1, p.ldc)
		SgemmSerial(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, c2, p.ldc)
		for i := range c1 {
			if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
				t.Fatalf("trans %v: SgemmSerial differs from Sgemm at %d: %v vs %v", tr, i, c2[i], c1[i])
			}
		}
	}
}

// TestSgemmNoWaits covers, on 2 to 4 threads whatever the machine's
// GOMAXPROCS, the products whose threads never wait for each other after
// the start: those whose threads pack all of B first (call.prepackB: a
// transposed B, a B whose power-of-two stride would crowd L2 if read in
// place), the same forced to have each thread pack its own sub-blocks of
// B (call.privateB, used for Bs too large to pack whole), and those whose
// threads share one packing of A and split the columns (call.colsOnly: few
// rows, A plain or transposed, several kc blocks, a partial panel of B).
func TestSgemmNoWaits(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, tc := range []struct {
		tA, tB  bool
		m, n, k int
	}{{false, true, 2300, 100, 70}, {false, false, 1100, 1024, 300}, {false, false, 64, 700, 1000}, {true, false, 50, 300, 900}} {
		p := newProblem(r, tc.tA, tc.tB, tc.m, tc.n, tc.k, 0, 1, 0.5)
		want, scale := refSgemm(p)
		for _, kn := range available {
			for _, threads := range []int{2, 3, 4} {
				name := fmt.Sprintf("%s/tA=%v,tB=%v,%dx%dx%d/threads=%d", kn.name, tc.tA, tc.tB, tc.m, tc.n, tc.k, threads)
				t.Run(name, func(t *testing.T) { checkThreads(t, kn, p, want, scale, threads) })
				private := func(c *call) {
					if c.prepackB {
						c.prepackB, c.privateB = false, true
						for _, w := range c.ws[:c.threads] {
							w.subB = grow(w.subB, ceilDiv(min(kn.ns, p.n), kn.nr)*kn.nr*min(kn.kc, p.k))
						}
					}
				}
				t.Run(name+"/privateB", func(t *testing.T) { checkAdjusted(t, kn, p, want, scale, threads, private) })
			}
		}
	}
}

// TestSgemmSplitsBitIdentical checks that the ways of splitting the work
// (threads, row chunks or column groups, B read in place, packed whole or
// per thread) give the same bits: only kc and the kernel family change
// the order of the sums.
func TestSgemmSplitsBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, s := range [][5]int{{2300, 100, 70, 0, 1}, {1100, 1024, 300, 0, 0}, {64, 700, 1000, 0, 0}, {50, 300, 900, 1, 0}, {300, 257, 513, 1, 1}} {
		p := newProblem(r, s[3] == 1, s[4] == 1, s[0], s[1], s[2], 0, 1, 0.5)
		for _, kn := range available {
			var first []float32
			for i, run := range []struct {
				threads int
				adjust  func(*call)
			}{{1, nil}, {2, nil}, {3, nil}, {4, func(c *call) {
				if c.prepackB {
					c.prepackB, c.privateB = false, true
					for _, w := range c.ws[:c.threads] {
						w.subB = grow(w.subB, ceilDiv(min(kn.ns, p.n), kn.nr)*kn.nr*min(kn.kc, p.k))
					}
				}
			}}, {2, func(c *call) { c.prepackB, c.rowsOnly = false, false }}} {
				q := p
				q.c = append([]float32(nil), p.c...)
				sgemmAdjusted(kn, q, run.threads, run.adjust)
				if i == 0 {
					first = q.c
					continue
				}
				for j := range q.c {
					if math.Float32bits(q.c[j]) != math.Float32bits(first[j]) {
						t.Fatalf("%s %v: run %d differs from one thread at %d: %v vs %v", kn.name, s, i, j, q.c[j], first[j])
					}
				}
			}
		}
	}
}

// TestRowSpans checks the row chunks of a call: they cover the rows of C
// in order, each starts on a micro-panel and holds at most unitRows rows,
// their micro-panels differ by one at most, and their number is a multiple
// of the threads wherever the micro-panels allow it.
func TestRowSpans(t *testing.T) {
	for _, tc := range []struct {
		m, mr, unitRows, threads int
		wantUnits                int
	}{
		{512, 14, 70, 2, 8},  // 37 micro-panels: 8 chunks of 4-5, not 7 of 5 and one of 2
		{512, 14, 224, 1, 3}, // one thread, mc rows at most
		{512, 14, 56, 2, 10},
		{100, 14, 56, 3, 3}, // 8 micro-panels: 2 chunks of 4 rounded up to 3
		{20, 14, 14, 4, 2},  // 2 micro-panels: no more chunks than micro-panels
		{7, 14, 14, 2, 1},   // a single partial micro-panel
		{4096, 16, 1024, 2, 4},
		{1000, 6, 96, 3, 12},
	} {
		rp := ceilDiv(tc.m, tc.mr)
		c := &call{p: problem{m: tc.m}, k: &kernel{mr: tc.mr}, unitRows: tc.unitRows}
		c.rowUnits = balancedUnits(rp, tc.unitRows/tc.mr, tc.threads)
		if c.rowUnits != tc.wantUnits {
			t.Errorf("m %d, mr %d, unitRows %d, threads %d: %d chunks, want %d", tc.m, tc.mr, tc.unitRows, tc.threads, c.rowUnits, tc.wantUnits)
		}
		next, least, most := 0, rp, 0
		for u := 0; u < c.rowUnits; u++ {
			ic, mc := c.rowSpan(u)
			if ic != next || ic%tc.mr != 0 || mc <= 0 || mc > tc.unitRows {
				t.Fatalf("m %d, mr %d, unitRows %d: chunk %d is rows [%d, %d), after row %d", tc.m, tc.mr, tc.unitRows, u, ic, ic+mc, next)
			}
			panels := ceilDiv(mc, tc.mr)
			least, most = min(least, panels), max(most, panels)
			next = ic + mc
		}
		if next != tc.m || most-least > 1 {
			t.Errorf("m %d, mr %d, unitRows %d: chunks end at row %d with %d-%d micro-panels", tc.m, tc.mr, tc.unitRows, next, least, most)
		}
	}
}
