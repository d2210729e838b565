package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestAMXConfig checks the tile configuration's bytes: palette 1, tiles
// 0-7 of 16 rows of 64 bytes, nothing else set.
func TestAMXConfig(t *testing.T) {
	cfg := amxConfig()
	for i, v := range cfg {
		want := byte(0)
		switch {
		case i == 0:
			want = 1
		case i >= 16 && i < 32 && i%2 == 0:
			want = 64
		case i >= 48 && i < 56:
			want = 16
		}
		if v != want {
			t.Errorf("byte %d = %d, want %d", i, v, want)
		}
	}
}

// pairedProblem returns a random paired problem (k counted in pairs) whose
// words hold bfloat16 pairs, and the same product on the unpacked float32
// factors (k doubled) for refSgemm. exact draws small integers, whose
// products' sums float32 holds exactly in any order.
func pairedProblem(r *rand.Rand, tA, tB bool, m, n, k2, pad int, beta float32, exact bool) (p, unpacked problem) {
	p = newProblem(r, tA, tB, m, n, k2, pad, 1, beta)
	word := func() float32 {
		half := func() uint32 {
			if exact {
				return uint32(roundBF16(float32(r.IntN(17) - 8)))
			}
			return uint32(roundBF16(2*r.Float32() - 1))
		}
		return math.Float32frombits(half() | half()<<16)
	}
	for i := range p.a {
		p.a[i] = word()
	}
	for i := range p.b {
		p.b[i] = word()
	}
	if exact && beta != 0 {
		for i := range p.c {
			p.c[i] = float32(r.IntN(9) - 4)
		}
	}
	ar, ac, br, bc := p.stored()
	ua, ub := make([]float32, 2*max(ar*ac, 1)), make([]float32, 2*max(br*bc, 1))
	dense := func(x []float32, ld, rows, cols int) []float32 {
		d := make([]float32, rows*cols)
		if cols == 0 {
			return d
		}
		for i := range rows {
			copy(d[i*cols:i*cols+cols], x[i*ld:])
		}
		return d
	}
	lda := unpackPairs(ua, dense(p.a, p.lda, ar, ac), ac, ar, ac, tA)
	ldb := unpackPairs(ub, dense(p.b, p.ldb, br, bc), bc, br, bc, !tB)
	unpacked = p
	unpacked.k, unpacked.a, unpacked.lda, unpacked.b, unpacked.ldb = 2*k2, ua, max(lda, 1), ub, max(ldb, 1)
	return p, unpacked
}

// runAMX runs p through amxProduct with tk on threads goroutines (after
// trivial's checks, as sgemmPaired does) and returns C.
func runAMX(tk tileKernel, p problem, threads int) []float32 {
	q := p
	q.c = append([]float32(nil), p.c...)
	if !q.trivial() {
		amxProduct(tk, q, threads)
	}
	return q.c
}

// checkAgainstRef compares C with the float64 product: exact products
// must be equal, others within (k+2) units of 2^-23 of the scale.
func checkAgainstRef(t *testing.T, name string, got []float32, p, unpacked problem, exact bool) {
	t.Helper()
	want, scale := refSgemm(unpacked)
	tol := float64(unpacked.k+2) * 0x1p-23
	bad := 0
	for i := range p.m {
		for j := range p.ldc {
			at := i*p.ldc + j
			if at >= len(got) {
				break
			}
			if j >= p.n {
				if math.Float32bits(got[at]) != math.Float32bits(p.c[at]) {
					t.Errorf("%s: C[%d,%d] (padding) changed", name, i, j)
					bad++
				}
				continue
			}
			w, s := want[i*p.n+j], scale[i*p.n+j]
			d := math.Abs(float64(got[at]) - w)
			if (exact && d != 0) || !(d <= tol*s+float64(unpacked.k)*0x1p-125) {
				t.Errorf("%s: C[%d,%d] = %v, want %v (scale %.3g)", name, i, j, got[at], w, s)
				bad++
			}
			if bad >= 10 {
				t.Fatalf("%s: too many errors", name)
			}
		}
	}
}

// amxShapes are the products the AMX tests run: zero sizes, sizes below,
// at and past a tile and a block of C, pairs of k below a step, whole
// steps, and past a k block (amxKC) with a remainder.
var amxShapes = [][3]int{
	{0, 5, 3}, {5, 0, 3}, {5, 3, 0}, {1, 1, 1}, {3, 5, 7}, {16, 16, 16},
	{31, 33, 15}, {32, 32, 16}, {32, 32, 17}, {33, 65, 48}, {64, 64, 33},
	{70, 40, amxKC + 21}, {33, 40, 2*amxKC + 16},
}

// TestAMXProduct runs the AMX driver on the Go model of the tile kernel,
// on every transposition, padded strides and beta 0, 1 and another,
// against the float64 product of the pairs, and checks that the result
// does not depend on the number of goroutines.
func TestAMXProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	variant := 0
	for _, s := range amxShapes {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, beta := range []float32{0, 1, -0.5} {
				// Padding and exactness take turns; the products past a k
				// block (the slow ones for the model) run half the cases.
				variant++
				pad, exact := 5*(variant%2), variant%3 == 0
				if s[2] > amxKC && variant%2 == 0 {
					continue
				}
				name := fmt.Sprintf("%dx%dx%d/t%v%v/pad%d/b%g/exact%v", s[0], s[1], s[2], tr[0], tr[1], pad, beta, exact)
				p, u := pairedProblem(r, tr[0], tr[1], s[0], s[1], s[2], pad, beta, exact)
				multi := runAMX(tileBF16Go, p, 3)
				checkAgainstRef(t, name, multi, p, u, exact)
				single := runAMX(tileBF16Go, p, 1)
				for i := range multi {
					if math.Float32bits(multi[i]) != math.Float32bits(single[i]) && !(math.IsNaN(float64(multi[i])) && math.IsNaN(float64(single[i]))) {
						t.Fatalf("%s: 3 and 1 goroutines differ at %d: %v, %v", name, i, multi[i], single[i])
					}
				}
			}
		}
	}
}

// TestAMXDispatch runs SgemmBF16 and SgemmPairedBF16 through the AMX
// driver (the model standing in for the assembly), as DUEL_ISA=amx runs
// them, against the rounded factors' float64 product.
func TestAMXDispatch(t *testing.T) {
	if !NativeBF16() {
		t.Skip("no AVX512_BF16 path here: the AMX driver is only reached from it")
	}
	defer func(k tileKernel) { amxKernel = k }(amxKernel)
	amxKernel = tileBF16Go
	if ISABF16() != "amx-bf16" {
		t.Errorf("ISABF16() = %q with the tiles, want amx-bf16", ISABF16())
	}
	r := rand.New(rand.NewPCG(23, 24))
	for _, s := range [][3]int{{1, 1, 1}, {33, 70, 65}, {64, 32, 96}} {
		for _, tr := range [][2]bool{{false, false}, {true, true}} {
			for _, ab := range [][2]float32{{1, 0}, {0.5, 1}} {
				p := newProblem(r, tr[0], tr[1], s[0], s[1], s[2], 2, ab[0], ab[1])
				checkBF16(t, p, runtime.GOMAXPROCS(0))
			}
			p, u := pairedProblem(r, tr[0], tr[1], s[0], s[1], s[2], 1, 0, false)
			got := append([]float32(nil), p.c...)
			SgemmPairedBF16(tr[0], tr[1], p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, 0, got, p.ldc)
			checkAgainstRef(t, fmt.Sprintf("paired %v %v", s, tr), got, p, u, false)
		}
	}
}

// TestTileBF16Go checks the model's denormal rules and its argument
// checks: denormal operands count as zero, a denormal sum becomes zero,
// and short slices or another configuration panic.
func TestTileBF16Go(t *testing.T) {
	cfg := amxConfig()
	a, b, c := make([]float32, amxBlock*amxTile), make([]float32, amxTile*amxBlock), make([]float32, amxBlock*amxBlock)
	// A's first pair: 2^-70 (even half) and 1 (odd); B's: 2^-70 and a
	// denormal bfloat16 (odd): the even product is 2^-140, a denormal
	// sum; the odd one reads the denormal as zero.
	a[0] = math.Float32frombits(uint32(roundBF16(0x1p-70)) | uint32(roundBF16(1))<<16)
	b[0] = math.Float32frombits(uint32(roundBF16(0x1p-70)) | 0x0001<<16)
	tileBF16Go(cfg, 1, a, amxTile, b, amxBlock, c, amxBlock, 0)
	if c[0] != 0 || math.Signbit(float64(c[0])) {
		t.Errorf("C[0] = %v (%#x), want +0: a denormal sum is flushed", c[0], math.Float32bits(c[0]))
	}
	a[0] = math.Float32frombits(uint32(roundBF16(3)) | uint32(roundBF16(-2))<<16)
	b[0] = math.Float32frombits(uint32(roundBF16(5)) | uint32(roundBF16(7))<<16)
	c[0] = 100
	tileBF16Go(cfg, 1, a, amxTile, b, amxBlock, c, amxBlock, 1)
	if c[0] != 100+15-14 {
		t.Errorf("C[0] = %v, want 101", c[0])
	}
	for name, call := range map[string]func(){
		"short a":      func() { tileBF16Go(cfg, 1, a[:len(a)-1], amxTile, b, amxBlock, c, amxBlock, 0) },
		"short c":      func() { tileBF16Go(cfg, 1, a, amxTile, b, amxBlock, c[:len(c)-1], amxBlock, 0) },
		"narrow ldb":   func() { tileBF16Go(cfg, 1, a, amxTile, b, amxBlock-1, c, amxBlock, 0) },
		"other config": func() { other := *cfg; other[48] = 8; tileBF16Go(&other, 1, a, amxTile, b, amxBlock, c, amxBlock, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			call()
		}()
	}
}

// TestAMXKernel runs the AMX assembly where the CPU and Linux have the
// tiles (Sapphire Rapids and later; skipped elsewhere), whatever DUEL_ISA
// says: each call against the Go model on random blocks with padded
// strides (small integers bit for bit, random pairs within the float32
// rounding), then the whole driver on it against the float64 product.
func TestAMXKernel(t *testing.T) {
	if !amxUsable() {
		t.Skip("no usable AMX tiles on this machine (CPU, operating system or build)")
	}
	r := rand.New(rand.NewPCG(25, 26))
	cfg := amxConfig()
	for _, steps := range []int{0, 1, 2, 5} {
		for _, exact := range []bool{true, false} {
			for _, load := range []int{0, 1} {
				lda, ldb, ldc := steps*amxTile+3, amxBlock+7, amxBlock+1
				word := func() float32 {
					if exact {
						return math.Float32frombits(uint32(roundBF16(float32(r.IntN(17)-8))) | uint32(roundBF16(float32(r.IntN(17)-8)))<<16)
					}
					return math.Float32frombits(uint32(roundBF16(2*r.Float32()-1)) | uint32(roundBF16(2*r.Float32()-1))<<16)
				}
				a := make([]float32, amxBlock*lda)
				b := make([]float32, max(steps*amxTile, 1)*ldb)
				for i := range a {
					a[i] = word()
				}
				for i := range b {
					b[i] = word()
				}
				c := make([]float32, amxBlock*ldc)
				for i := range c {
					c[i] = float32(r.IntN(9) - 4)
				}
				want := append([]float32(nil), c...)
				tileBF16Go(cfg, steps, a, lda, b, ldb, want, ldc, load)
				got := append([]float32(nil), c...)
				tileAMX(cfg, steps, a, lda, b, ldb, got, ldc, load)
				for i := range got {
					d := math.Abs(float64(got[i]) - float64(want[i]))
					if (exact && d != 0) || d > float64(2*steps*amxTile+2)*0x1p-23*(math.Abs(float64(want[i]))+float64(2*steps*amxTile)) {
						t.Fatalf("steps %d exact %v load %d: C[%d] = %v, the model %v", steps, exact, load, i, got[i], want[i])
					}
				}
			}
		}
	}
	for _, s := range amxShapes {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, beta := range []float32{0, 1} {
				name := fmt.Sprintf("%dx%dx%d/t%v%v/b%g", s[0], s[1], s[2], tr[0], tr[1], beta)
				p, u := pairedProblem(r, tr[0], tr[1], s[0], s[1], s[2], 3, beta, false)
				checkAgainstRef(t, name, runAMX(tileAMX, p, runtime.GOMAXPROCS(0)), p, u, false)
			}
		}
	}
}
