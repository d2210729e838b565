package gemm

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// refRoundBF16 rounds x to bfloat16 through math/big (to nearest, ties to
// even, 8 bits of precision), with VCVTNE2PS2BF16's special cases:
// denormals become zero, NaNs stay NaNs.
func refRoundBF16(x float32) float32 {
	f := float64(x)
	switch {
	case math.IsNaN(f):
		return x
	case math.IsInf(f, 0):
		return x
	case math.Abs(f) < 0x1p-126:
		return float32(math.Copysign(0, f))
	}
	b := new(big.Float).SetPrec(8).SetMode(big.ToNearestEven)
	b.SetFloat64(f)
	r, _ := b.Float64()
	return float32(r) // exact: 8 bits fit, overflow past MaxFloat32 gives Inf as the hardware does
}

// bf16Cases are float32 bit patterns that exercise the rounding: zeros,
// denormals, the smallest normals, ties (even and odd), values that carry
// into the exponent, the largest finite values, infinities and NaNs.
var bf16Cases = []uint32{
	0, 0x80000000, 1, 0x807fffff, 0x00800000, 0x80800000,
	0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0x3fff8000, 0x3fffffff,
	0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, 0xff7fffff,
	0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xff812345, 0x7fffffff,
	0x3f800000, 0xbf800000, 0x40490fdb,
}

func TestRoundBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	values := append([]uint32(nil), bf16Cases...)
	for range 20000 {
		values = append(values, r.Uint32())
	}
	for _, u := range values {
		x := math.Float32frombits(u)
		got, want := RoundBF16(x), refRoundBF16(x)
		if math.IsNaN(float64(want)) {
			if !math.IsNaN(float64(got)) || math.Float32bits(got)&0x400000 == 0 || math.Float32bits(got)>>31 != u>>31 {
				t.Errorf("RoundBF16(%#08x) = %#08x, want a quiet NaN of the same sign", u, math.Float32bits(got))
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("RoundBF16(%#08x) = %#08x, want %#08x", u, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// TestBF16Conversions compares the vector conversions (where the CPU has
// them) with roundBF16 on the bit patterns above and random ones, at
// lengths around the vector blocks, zero included.
func TestBF16Conversions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	randBits := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			if i < len(bf16Cases) && r.IntN(2) == 0 {
				s[i] = math.Float32frombits(bf16Cases[r.IntN(len(bf16Cases))])
				continue
			}
			s[i] = math.Float32frombits(r.Uint32())
		}
		return s
	}
	pair := func(lo, hi float32) uint32 { return uint32(roundBF16(lo)) | uint32(roundBF16(hi))<<16 }
	for _, n := range []int{0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257} {
		row := randBits(n)
		dst := make([]float32, (n+1)/2)
		pairColsRow(dst, row)
		if n > 0 {
			strided := make([]float32, 2*len(dst)+3)
			pairCols(strided, len(dst)+3, append(append([]float32(nil), row...), row...), n, 2, n, 2)
			for j := range dst {
				want := math.Float32bits(dst[j])
				if math.Float32bits(strided[j]) != want || math.Float32bits(strided[len(dst)+3+j]) != want {
					t.Fatalf("pairCols with a padded stride, n %d: word %d differs", n, j)
				}
			}
		}
		for j := 0; j < n; j += 2 {
			hi := float32(0)
			if j+1 < n {
				hi = row[j+1]
			}
			if got, want := math.Float32bits(dst[j/2]), pair(row[j], hi); got != want {
				t.Fatalf("pairColsRow, n %d: word %d = %#08x, want %#08x", n, j/2, got, want)
			}
		}
		for _, rows := range []int{1, 2, 3, 4} {
			x := randBits(rows * n)
			out := make([]float32, (rows+1)/2*n)
			pairRows(out, n, x, n, rows, n, 2)
			for i := 0; i < (rows+1)/2; i++ {
				for j := 0; j < n; j++ {
					hi := float32(0)
					if 2*i+1 < rows {
						hi = x[(2*i+1)*n+j]
					}
					if got, want := math.Float32bits(out[i*n+j]), pair(x[2*i*n+j], hi); got != want {
						t.Fatalf("pairRows, %d x %d: word (%d, %d) = %#08x, want %#08x", rows, n, i, j, got, want)
					}
				}
			}
		}
	}
}

// roundedProblem returns p with its factors rounded to bfloat16 (copies).
func roundedProblem(p problem) problem {
	q := p
	q.a = make([]float32, len(p.a))
	q.b = make([]float32, len(p.b))
	for i, v := range p.a {
		q.a[i] = RoundBF16(v)
	}
	for i, v := range p.b {
		q.b[i] = RoundBF16(v)
	}
	return q
}

// checkBF16 runs p through sgemmBF16 on threads threads and compares it
// with the float64 product of the rounded factors: the sums' float32
// rounding allows (k+2) units of 2^-23 of the scale sum |a||b|, plus the
// denormals a flushed sum may lose.
func checkBF16(t *testing.T, p problem, threads int) []float32 {
	t.Helper()
	want, scale := refSgemm(roundedProblem(p))
	in := p
	in.c = append([]float32(nil), p.c...)
	sgemmBF16(in, threads)
	tol := float64(p.k+2) * 0x1p-23
	bad := 0
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.ldc && i*p.ldc+j < len(in.c); j++ {
			got := in.c[i*p.ldc+j]
			if j >= p.n {
				if math.Float32bits(got) != math.Float32bits(p.c[i*p.ldc+j]) {
					t.Errorf("C[%d,%d] (padding) changed", i, j)
					bad++
				}
				continue
			}
			w, s := want[i*p.n+j], scale[i*p.n+j]
			if d := math.Abs(float64(got) - w); !(d <= tol*s+float64(p.k)*0x1p-125) {
				t.Errorf("C[%d,%d] = %v, want %v (error %.3g, scale %.3g)", i, j, got, w, d, s)
				bad++
			}
			if bad >= 10 {
				t.Fatalf("too many errors")
			}
		}
	}
	return in.c
}

// TestSgemmBF16Shapes runs every transposition on odd, tile-sized and zero
// shapes with strides padded or not, against the rounded factors' float64
// product, threaded and on one thread (bit-identical).
func TestSgemmBF16Shapes(t *testing.T) {
	t.Logf("native bfloat16 kernels: %v", NativeBF16())
	r := rand.New(rand.NewPCG(7, 8))
	sizes := [][3]int{
		{0, 5, 3}, {5, 0, 3}, {5, 3, 0}, {1, 1, 1}, {1, 1, 2}, {3, 5, 7},
		{14, 32, 16}, {15, 33, 17}, {16, 16, 16}, {13, 31, 1}, {29, 65, 63},
		{64, 64, 64}, {100, 37, 250}, {140, 300, 433}, {33, 600, 870},
	}
	for _, s := range sizes {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, pad := range []int{0, 3} {
				for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.5, 0}, {0.7, -1.5}} {
					name := fmt.Sprintf("%dx%dx%d/t%v%v/pad%d/a%gb%g", s[0], s[1], s[2], tr[0], tr[1], pad, ab[0], ab[1])
					t.Run(name, func(t *testing.T) {
						p := newProblem(r, tr[0], tr[1], s[0], s[1], s[2], pad, ab[0], ab[1])
						multi := checkBF16(t, p, runtime.GOMAXPROCS(0))
						single := checkBF16(t, p, 1)
						for i := range multi {
							if math.Float32bits(multi[i]) != math.Float32bits(single[i]) && !(math.IsNaN(float64(multi[i])) && math.IsNaN(float64(single[i]))) {
								t.Fatalf("threaded and serial results differ at %d: %v, %v", i, multi[i], single[i])
							}
						}
					})
				}
			}
		}
	}
}

// TestSgemmBF16Exact multiplies small integers, which bfloat16 holds
// exactly and whose sums float32 holds exactly, so that every path must
// give the exact product: a wrong pair order, a lost odd k or a
// mis-encoded instruction shows as a wrong integer.
func TestSgemmBF16Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range [][3]int{{1, 1, 1}, {7, 9, 5}, {14, 32, 33}, {30, 70, 129}, {257, 129, 301}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			m, n, k := s[0], s[1], s[2]
			p := newProblem(r, tr[0], tr[1], m, n, k, 1, 1, 0)
			for i := range p.a {
				p.a[i] = float32(r.IntN(33) - 16)
			}
			for i := range p.b {
				p.b[i] = float32(r.IntN(33) - 16)
			}
			want, _ := refSgemm(p)
			SgemmBF16(p.transA, p.transB, m, n, k, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					if got := p.c[i*p.ldc+j]; float64(got) != want[i*n+j] {
						t.Fatalf("%dx%dx%d trans %v: C[%d,%d] = %v, want %v", m, n, k, tr, i, j, got, want[i*n+j])
					}
				}
			}
		}
	}
}

// TestSgemmBF16Emulated checks the fallback (Sgemm on rounded factors)
// against the native path where the CPU has one: both compute the same
// rounded products, summed in different orders.
func TestSgemmBF16Emulated(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	p := newProblem(r, false, true, 61, 97, 300, 2, 1, 0)
	checkBF16(t, p, 2)
	if activeBF16 == nil {
		t.Skip("no native bfloat16 kernel on this CPU: the emulation is what checkBF16 checked")
	}
	native := append([]float32(nil), p.c...)
	sgemmBF16(problem{p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, native, p.ldc, nil}, 2)
	emulated := append([]float32(nil), p.c...)
	emulateBF16(problem{p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, emulated, p.ldc, nil}, 2)
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.n; j++ {
			x, y := native[i*p.ldc+j], emulated[i*p.ldc+j]
			if d := math.Abs(float64(x - y)); d > 1e-4*(1+math.Abs(float64(y))) {
				t.Fatalf("C[%d,%d]: native %v, emulated %v", i, j, x, y)
			}
		}
	}
}

// TestChooseBF16 checks that the native kernel runs only under an AVX-512
// SGEMM kernel (DUEL_ISA=avx2 or generic turns it off).
func TestChooseBF16(t *testing.T) {
	ks := []*kernel{{name: "avx512bf16", mr: 14, nr: 32, lanes: 16}}
	if chooseBF16(nil, &kernel{lanes: 16}) != nil {
		t.Error("a CPU without bfloat16 kernels got one")
	}
	if chooseBF16(ks, &kernel{name: "avx2", lanes: 8}) != nil {
		t.Error("DUEL_ISA=avx2 still ran the bfloat16 kernel")
	}
	if k := chooseBF16(ks, &kernel{name: "avx512", lanes: 16}); k == nil || k.kc == 0 {
		t.Errorf("AVX-512 with bfloat16: got %+v, want the kernel with its blocking", k)
	}
}

// BenchmarkSgemmBF16 times SgemmBF16 beside Sgemm (float32) on the same
// operands in the same benchmark, on the engine's shapes; the metric
// x_sgemm is the bfloat16 product's speed over the float32 one's.
func BenchmarkSgemmBF16(b *testing.B) {
	for _, s := range benchShapes {
		m, n, k := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			a, bm, c := benchOperands(m, n, k)
			flop := 2 * float64(m) * float64(n) * float64(k)
			var fp32, bf16 float64
			for i := 0; i < b.N; i++ {
				fp32 = bestNsPerCall(flop, func() { Sgemm(false, false, m, n, k, 1, a, k, bm, n, 0, c, n) })
				bf16 = bestNsPerCall(flop, func() { SgemmBF16(false, false, m, n, k, 1, a, k, bm, n, 0, c, n) })
			}
			b.ReportMetric(flop/bf16, "GFLOP/s")
			b.ReportMetric(flop/fp32, "fp32-GFLOP/s")
			b.ReportMetric(fp32/bf16, "x_sgemm")
		})
	}
}

// bestNsPerCall returns the fastest of three timings of f (after one call
// to warm up), each over about 2 GFLOP of calls doing flop each, in
// nanoseconds per call.
func bestNsPerCall(flop float64, f func()) float64 {
	f()
	best := math.Inf(1)
	for range 3 {
		start := time.Now()
		reps := max(1, int(2e9/flop))
		for range reps {
			f()
		}
		best = min(best, float64(time.Since(start).Nanoseconds())/float64(reps))
	}
	return best
}

// TestSgemmPairedBF16 pairs the factors with PairPlanes and checks the
// paired product against SgemmBF16 (bit for bit: the same words through
// the same driver) and its unpacking fallback against the rounded
// factors' float64 product, for every transposition and odd k.
func TestSgemmPairedBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, s := range [][3]int{{1, 1, 1}, {7, 5, 3}, {14, 32, 64}, {29, 40, 77}, {64, 3, 130}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			m, n, k := s[0], s[1], s[2]
			k2 := (k + 1) / 2
			p := newProblem(r, tr[0], tr[1], m, n, k, 0, 1, 0)
			// Pair op(A) along k into a2 (m x k2, or k2 x m when transposed).
			opA := func(i, l int) float32 {
				if tr[0] {
					return p.a[l*p.lda+i]
				}
				return p.a[i*p.lda+l]
			}
			opB := func(l, j int) float32 {
				if tr[1] {
					return p.b[j*p.ldb+l]
				}
				return p.b[l*p.ldb+j]
			}
			a2 := make([]float32, m*k2)
			b2 := make([]float32, k2*n)
			lda2, ldb2 := k2, n
			if tr[0] {
				lda2 = m
			}
			if tr[1] {
				ldb2 = k2
			}
			pairAt := func(x func(int) float32, l int) float32 {
				r0, r1 := []float32{x(2 * l)}, []float32{0}
				if 2*l+1 < k {
					r1[0] = x(2*l + 1)
				}
				d := make([]float32, 1)
				PairPlanes(d, r0, r1)
				return d[0]
			}
			for i := range m {
				for l := range k2 {
					w := pairAt(func(q int) float32 { return opA(i, q) }, l)
					if tr[0] {
						a2[l*lda2+i] = w
					} else {
						a2[i*lda2+l] = w
					}
				}
			}
			for j := range n {
				for l := range k2 {
					w := pairAt(func(q int) float32 { return opB(q, j) }, l)
					if tr[1] {
						b2[j*ldb2+l] = w
					} else {
						b2[l*ldb2+j] = w
					}
				}
			}
			got := make([]float32, m*n)
			SgemmPairedBF16(tr[0], tr[1], m, n, k2, a2, lda2, b2, ldb2, 0, got, n)
			want, scale := refSgemm(roundedProblem(p))
			for i, w := range want {
				if d := math.Abs(float64(got[i]) - w); !(d <= float64(k+2)*0x1p-23*scale[i]+1e-30) {
					t.Fatalf("%v trans %v: C[%d] = %v, want %v", s, tr, i, got[i], w)
				}
			}
			if NativeBF16() {
				viaBF16 := make([]float32, m*n)
				SgemmBF16(tr[0], tr[1], m, n, k, 1, p.a, p.lda, p.b, p.ldb, 0, viaBF16, n)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(viaBF16[i]) {
						t.Fatalf("%v trans %v: paired C[%d] = %v, SgemmBF16 %v", s, tr, i, got[i], viaBF16[i])
					}
				}
			}
			unpacked := make([]float32, m*n)
			q := problem{tr[0], tr[1], m, n, k2, 1, a2, lda2, b2, ldb2, 0, unpacked, n, nil}
			ua, ub := make([]float32, 2*m*k2), make([]float32, 2*k2*n)
			ar, ac, br, bc := m, k2, k2, n
			if tr[0] {
				ar, ac = ac, ar
			}
			if tr[1] {
				br, bc = bc, br
			}
			lda, ldb := unpackPairs(ua, q.a, q.lda, ar, ac, tr[0]), unpackPairs(ub, q.b, q.ldb, br, bc, !tr[1])
			Sgemm(tr[0], tr[1], m, n, 2*k2, 1, ua, lda, ub, ldb, 0, unpacked, n)
			for i, w := range want {
				if d := math.Abs(float64(unpacked[i]) - w); !(d <= float64(k+2)*0x1p-23*scale[i]+1e-30) {
					t.Fatalf("%v trans %v: unpacked C[%d] = %v, want %v", s, tr, i, unpacked[i], w)
				}
			}
		}
	}
}

func TestBF16Bits(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{0, 1, 31, 32, 33, 95, 200} {
		src := make([]float32, n)
		for i := range src {
			src[i] = math.Float32frombits(r.Uint32())
			if i < len(bf16Cases) {
				src[i] = math.Float32frombits(bf16Cases[i])
			}
		}
		dst := make([]uint16, n)
		BF16Bits(dst, src)
		for i, v := range src {
			if dst[i] != roundBF16(v) {
				t.Fatalf("n %d: BF16Bits[%d] = %#x, want %#x", n, i, dst[i], roundBF16(v))
			}
		}
	}
}

// TestPairRuns checks PairRuns (the vector loop where the CPU has it)
// against the definition, forward and reversed, for runs up to and past
// the vector's 16 words, with gaps between the runs.
func TestPairRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{1, 2, 9, 15, 16, 17, 25} {
		for _, reverse := range []bool{false, true} {
			const count, step, dstStep = 7, 31, 20
			size := (count-1)*step + n
			r0, r1 := make([]float32, size), make([]float32, size)
			for i := range r0 {
				r0[i], r1[i] = math.Float32frombits(r.Uint32()), float32(r.NormFloat64())
			}
			dst := make([]float32, (count-1)*dstStep+n+3)
			for i := range dst {
				dst[i] = -7
			}
			PairRuns(dst, dstStep, r0, r1, step, count, n, reverse)
			for i := range count {
				for q := range dstStep {
					at := i*dstStep + q
					if at >= len(dst) {
						break
					}
					got := math.Float32bits(dst[at])
					if q >= n {
						if dst[at] != -7 {
							t.Fatalf("n %d: word %d past run %d written", n, at, i)
						}
						continue
					}
					s := q
					if reverse {
						s = n - 1 - q
					}
					want := uint32(roundBF16(r0[i*step+s])) | uint32(roundBF16(r1[i*step+s]))<<16
					if got != want {
						t.Fatalf("n %d reverse %v: run %d word %d = %#x, want %#x", n, reverse, i, q, got, want)
					}
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("PairRuns past the end of r1 did not panic")
		}
	}()
	PairRuns(make([]float32, 40), 10, make([]float32, 40), make([]float32, 20), 10, 4, 9, false)
}
