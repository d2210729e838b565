package cuda

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// roundTF32 is cvt.rna.tf32.f32, written here independently of the
// emulator's: x to 10 mantissa bits, to nearest, ties away from zero.
func roundTF32(x float32) float32 {
	if x != x || math.IsInf(float64(x), 0) {
		return x
	}
	u := math.Float32bits(x)
	lost := u & 0x1fff
	u &^= 0x1fff
	if lost >= 0x1000 { // half an ULP or more: away from zero (the magnitude grows; an exponent carry is right)
		u += 0x2000
	}
	return math.Float32frombits(u)
}

// roundBF16 is x rounded to bfloat16 (7 mantissa bits), to nearest, ties
// to even.
func roundBF16(x float32) float32 {
	if x != x || math.IsInf(float64(x), 0) {
		return x
	}
	u := math.Float32bits(x)
	lost, kept := u&0xffff, u&^0xffff
	if lost > 0x8000 || (lost == 0x8000 && kept&0x10000 != 0) {
		kept += 0x10000
	}
	return math.Float32frombits(kept)
}

func TestRoundTF32BF16(t *testing.T) {
	one := float32(1)
	for _, tc := range []struct {
		f       func(float32) float32
		x, want float32
	}{
		{roundTF32, one + 0x1p-11, one + 0x1p-10}, // tie: away from zero
		{roundTF32, -(one + 0x1p-11), -(one + 0x1p-10)},
		{roundTF32, one + 3*0x1p-11, one + 0x1p-9}, // tie: away from zero (odd or even)
		{roundTF32, one + 0x1p-11 - 0x1p-23, 1},
		{roundTF32, math.MaxFloat32, float32(math.Inf(1))},
		{roundBF16, one + 0x1p-8, 1}, // tie: to even
		{roundBF16, one + 3*0x1p-8, one + 0x1p-6},
		{roundBF16, one + 0x1p-8 + 0x1p-20, one + 0x1p-7},
		{roundBF16, -(one + 3*0x1p-8), -(one + 0x1p-6)},
		{roundBF16, math.MaxFloat32, float32(math.Inf(1))},
	} {
		if got := tc.f(tc.x); got != tc.want {
			t.Errorf("round(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

// gemmPrecisionCases are the products of the precision tests: one
// element, zero sizes, sizes off the 128 x 128 tiles and the 16- and
// 32-deep panels (1, 7, 33, 130), several tiles, batches with strides and
// broadcasts (stride 0), offsets, padded leading dimensions, alpha/beta and
// beta = 0 over NaN; then operands aligned for 16-byte copies.
func gemmPrecisionCases(r *rand.Rand) []tensor.GemmArgs {
	type shape struct{ m, n, k, batch int }
	shapes := []shape{{1, 1, 1, 1}, {0, 3, 2, 1}, {3, 0, 2, 1}, {2, 3, 0, 1}, {0, 0, 0, 2}, {7, 33, 130, 1}, {130, 7, 33, 2},
		{33, 130, 7, 1}, {129, 130, 40, 1}, {1, 200, 300, 1}, {17, 9, 64, 3}}
	scalars := [][2]float32{{1, 0}, {1.25, 0.5}, {-0.5, 1}, {2, 0}}
	var cs []tensor.GemmArgs
	for i, s := range shapes {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				sc := scalars[(i+len(cs))%len(scalars)]
				g := tensor.GemmArgs{TransA: ta, TransB: tb, M: s.m, N: s.n, K: s.k, Alpha: sc[0], Beta: sc[1], Batch: s.batch,
					OffA: r.IntN(3), OffB: r.IntN(3), OffC: r.IntN(3)}
				ra, ca, rb, cb := g.M, g.K, g.K, g.N
				if ta {
					ra, ca = ca, ra
				}
				if tb {
					rb, cb = cb, rb
				}
				g.LDA, g.LDB, g.LDC = max(ca, 1)+r.IntN(3), max(cb, 1)+r.IntN(3), max(g.N, 1)+r.IntN(3)
				if r.IntN(3) > 0 {
					g.StrideA = ra*g.LDA + r.IntN(3)
				}
				if r.IntN(3) > 0 {
					g.StrideB = rb*g.LDB + r.IntN(3)
				}
				g.StrideC = g.M*g.LDC + r.IntN(3)
				cs = append(cs, g)
			}
		}
	}
	// Operands whose every row starts on 16 bytes (offsets 0, leading
	// dimensions and strides multiples of 4 floats): the tensor-core
	// kernels' 16-byte copies, over several panels and partial tiles.
	for i, s := range []shape{{1, 200, 300, 1}, {33, 130, 100, 2}, {130, 40, 72, 1}} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				sc := scalars[(i+len(cs))%len(scalars)]
				g := tensor.GemmArgs{TransA: ta, TransB: tb, M: s.m, N: s.n, K: s.k, Alpha: sc[0], Beta: sc[1], Batch: s.batch}
				ra, ca, rb, cb := g.M, g.K, g.K, g.N
				if ta {
					ra, ca = ca, ra
				}
				if tb {
					rb, cb = cb, rb
				}
				g.LDA, g.LDB, g.LDC = (ca+3)&^3, (cb+3)&^3, (g.N+3)&^3
				g.StrideA, g.StrideB, g.StrideC = ra*g.LDA, rb*g.LDB, g.M*g.LDC
				cs = append(cs, g)
			}
		}
	}
	return cs
}

// gemmDriverCases returns the products of cs (gemmPrecisionCases) that
// the fake driver's children run (TestGemmPrecisionKernel,
// TestGemmWGKernel): every shape, shape i in the (i mod 4)-th of its four
// transpositions, so that each transposition still runs on three or four
// shapes, zero sizes, batches and aligned operands among them. The
// children's kernels are the emulator's, and TestGemmPrecisionEmulated
// checks every case on each of them, with an eighth of the children's
// tolerance. What the fake driver adds is the path through Device and
// the driver bindings (module loads, shared-memory opt-ins, launches,
// copies of every size, the allocator) and the kernel a product runs
// there (gemmFor), which depend on the shape and not on the
// transposition; a launch that does depend on it (TCWG's packing) still
// runs through the driver in every transposition.
func gemmDriverCases(cs []tensor.GemmArgs) []tensor.GemmArgs {
	var out []tensor.GemmArgs
	for i, g := range cs { // four per shape: (TransA, TransB) false/false, false/true, true/false, true/true
		if i%4 == (i/4)%4 {
			out = append(out, g)
		}
	}
	return out
}

// gemmSizes returns the element counts of g's A, B and C from their
// offsets on.
func gemmSizes(g tensor.GemmArgs) (na, nb, nc int) {
	ra, rb := g.M, g.K
	if g.TransA {
		ra = g.K
	}
	if g.TransB {
		rb = g.N
	}
	last := max(g.Batch-1, 0)
	return g.OffA + last*g.StrideA + ra*g.LDA, g.OffB + last*g.StrideB + rb*g.LDB, g.OffC + last*g.StrideC + g.M*g.LDC
}

// gemmWant returns C after g with the factors rounded by round (nil:
// FP32), the products summed in float64, and per element the tolerance
// u * (steps + 2) * |alpha| * sum_k |a_k b_k| + u * |beta c| with u = 2^-23
// and steps the mma steps of K (kstep deep) the kernel rounds its FP32
// accumulator after, times slack (1 for the emulator, which rounds each
// step's exact sum once; more for the hardware, whose tensor cores align
// and truncate within a step).
func gemmWant(g tensor.GemmArgs, a, b, c []float32, round func(float32) float32, kstep int, slack float64) (want []float32, tol []float64) {
	want = append([]float32(nil), c...)
	tol = make([]float64, len(c))
	if round == nil {
		round = func(x float32) float32 { return x }
	}
	steps := float64((g.K + kstep - 1) / kstep)
	const u = 0x1p-23
	for bi := 0; bi < g.Batch; bi++ {
		for i := 0; i < g.M; i++ {
			for j := 0; j < g.N; j++ {
				var acc, mag float64
				for k := 0; k < g.K; k++ {
					var x, y float32
					if g.TransA {
						x = a[g.OffA+bi*g.StrideA+k*g.LDA+i]
					} else {
						x = a[g.OffA+bi*g.StrideA+i*g.LDA+k]
					}
					if g.TransB {
						y = b[g.OffB+bi*g.StrideB+j*g.LDB+k]
					} else {
						y = b[g.OffB+bi*g.StrideB+k*g.LDB+j]
					}
					p := float64(round(x)) * float64(round(y))
					acc += p
					mag += math.Abs(p)
				}
				o := g.OffC + bi*g.StrideC + i*g.LDC + j
				v := float64(g.Alpha) * acc
				tol[o] = slack * u * (steps + 2) * math.Abs(float64(g.Alpha)) * mag
				if g.Beta != 0 {
					v += float64(g.Beta) * float64(c[o])
					tol[o] += slack * u * math.Abs(float64(g.Beta)*float64(c[o]))
				}
				want[o] = float32(v)
			}
		}
	}
	return want, tol
}

// testGemmPrecision runs gemmPrecisionCases on be in its precision against
// gemmWant (slack as there), checking every element of C's buffer (the
// padding and the elements of other batches untouched, bit for bit); in
// the fake driver's children, gemmDriverCases of them.
func testGemmPrecision(t *testing.T, be *Backend, slack float64) {
	t.Helper()
	round, kstep := func(x float32) float32 { return x }, 1
	switch be.Precision() {
	case TF32:
		round, kstep = roundTF32, 8
	case BF16:
		round, kstep = roundBF16, 16
	}
	r := rand.New(rand.NewPCG(21, uint64(be.Precision())))
	cases := gemmPrecisionCases(r)
	if os.Getenv(envFake) != "" {
		cases = gemmDriverCases(cases)
	}
	for _, g := range cases {
		na, nb, nc := gemmSizes(g)
		a, b, c := make([]float32, na), make([]float32, nb), make([]float32, nc)
		for i := range a {
			a[i] = float32(r.Float64()*2 - 1)
		}
		for i := range b {
			b[i] = float32(r.Float64()*2 - 1)
		}
		for i := range c {
			c[i] = float32(r.Float64()*2 - 1)
			if g.Beta == 0 && r.IntN(2) == 0 {
				c[i] = float32(math.NaN()) // must not be read
			}
		}
		want, tol := gemmWant(g, a, b, c, round, kstep, slack)
		ga, gb, gc := be.Alloc(max(na, 1)), be.Alloc(max(nb, 1)), be.Alloc(max(nc, 1))
		be.CopyIn(ga, 0, a)
		be.CopyIn(gb, 0, b)
		be.CopyIn(gc, 0, c)
		g.A, g.B, g.C = ga, gb, gc
		be.Gemm(g)
		got := make([]float32, nc)
		be.CopyOut(got, gc, 0)
		what := fmt.Sprintf("%v Gemm tA=%v tB=%v m=%d n=%d k=%d batch=%d alpha=%v beta=%v", be.Precision(), g.TransA, g.TransB, g.M, g.N, g.K, g.Batch, g.Alpha, g.Beta)
		bad := 0
		for i := range got {
			ok := math.Float32bits(got[i]) == math.Float32bits(want[i]) || (got[i] != got[i] && want[i] != want[i]) ||
				math.Abs(float64(got[i])-float64(want[i])) <= tol[i]
			if !ok {
				if bad++; bad <= 5 {
					t.Errorf("%s: C[%d] = %v, want %v (tolerance %.3g)", what, i, got[i], want[i], tol[i])
				}
			}
		}
		for _, x := range []tensor.Buffer{ga, gb, gc} {
			be.Release(x)
		}
	}
}

// backendOnEmulator returns a backend on the emulator e in precision p
// with tensor-core kernels k.
func backendOnEmulator(t *testing.T, e *cudatest.Emulator, p Precision, k TCKernel) *Backend {
	t.Helper()
	be, err := newBackend(e, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got := be.SetPrecision(p); got != p {
		t.Fatalf("SetPrecision(%v) = %v on the emulator", p, got)
	}
	be.SetTCKernel(k)
	return be
}

// TestGemmPrecisionEmulated runs gemm_tf32 and gemm_bf16 (TCV1),
// gemm_tc2_tf32 and gemm_tc2_bf16 (TCV2), gemm_tc3_tf32 (TCV3),
// gemm_wg_tf32 and gemm_wg_bf16 (TCWG, with their packing kernels), the
// gemm_wg3_* of TCWG3, the clustered gemm_wgm_*, gemm_wgm3_* and
// gemm_wgms_* and gemm_wgs_* of TCWGM, TCWGM3, TCWGMS and TCWGS (with the tiled packing),
// gemm_wgp_* (TCWGP: the packing in the product's launch), and
// sgemm_f32 for FP32, through
// the backend on the CPU emulator against gemmWant: the factors rounded as
// the kernels round them, the emulator's mma rounding its accumulator once
// per step.
func TestGemmPrecisionEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	for _, p := range []Precision{TF32, BF16, FP32} {
		kinds := []TCKernel{TCV1, TCV2, TCWG, TCWG3, TCWGM, TCWGM3, TCWGMS, TCWGS, TCWGP}
		switch p {
		case FP32:
			kinds = []TCKernel{TCAuto}
		case TF32:
			kinds = append(kinds, TCV3)
		}
		for _, k := range kinds {
			t.Run(p.String()+"/"+k.String(), func(t *testing.T) {
				be := backendOnEmulator(t, e, p, k)
				t.Logf("kernel %s", be.gemmKernelName())
				if c, _, ok := wgChoice(p, k); ok && be.gemmKernelName() != c.name {
					t.Fatalf("%v: kernel %s, want %s", k, be.gemmKernelName(), c.name)
				}
				testGemmPrecision(t, be, 1)
			})
		}
	}
}

// TestGemmPrecisionKernel runs the same products on the GPU (and on the
// fake driver, TestGemmPrecisionFakeDriver): tensor cores from compute
// capability 8.0 on, with the kernels TCAuto picks (gemm_tc3_tf32 and
// gemm_tc2_bf16 where the device gives them their shared memory), with
// TCV1, TCV2 (gemm_tc2_*) and, for TF32, TCV3, with 8 times the
// emulator's tolerance (the hardware's accumulation within an mma is not
// IEEE's), and the FP32 fallback below it (TCWG: TestGemmWGKernel). GPU
// only.
func TestGemmPrecisionKernel(t *testing.T) {
	d := needGPU(t)
	for _, p := range []Precision{TF32, BF16, FP32} {
		t.Run(p.String(), func(t *testing.T) {
			for _, k := range []TCKernel{TCAuto, TCV1, TCV2, TCV3} {
				be, err := newBackend(d, 256)
				if err != nil {
					t.Fatal(err)
				}
				got := be.SetPrecision(p)
				if want := p; d.Capability() < 80 {
					want = FP32
					if got != want {
						t.Fatalf("SetPrecision(%v) = %v on %v, want the FP32 fallback", p, got, d)
					}
				} else if got != want {
					t.Fatalf("SetPrecision(%v) = %v on %v", p, got, d)
				}
				be.SetTCKernel(k)
				if k == TCV3 && (p != TF32 || got != TF32 || !be.tc2Allowed(2, be.gemmLaunch())) {
					continue // gemm_tc3_tf32 only, where the device gives it its shared memory
				}
				if k == TCV2 && (got == FP32 || !be.tc2Allowed(int(got-TF32), be.gemmLaunch())) {
					continue // gemm_tc2_*, where the device gives it its shared memory
				}
				t.Logf("%v %v: kernel %s", p, k, be.gemmKernelName())
				testGemmPrecision(t, be, 8)
				if err := be.Synchronize(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestWGSharedConstant checks that wgShared, wg3Shared, wgmShared and
// wgm3Shared are gemm_wg.cu's WG_SHARED, WG3_SHARED, WGM_SHARED and
// WGM3_SHARED (4 stages of (WG_BM or WG3_BM + WG_BN) 128-byte rows, plus
// 1024, plus two 8-byte mbarriers a stage for the clustered kernels), and
// its tiles wgChoice's.
func TestWGSharedConstant(t *testing.T) {
	src := kernelSource(t, "gemm_wg.cu")
	def := func(name string) int { return kernelDefine(t, src, "gemm_wg.cu", name) }
	for _, tc := range []struct {
		k      TCKernel
		bm     string
		bars   int    // bytes of mbarriers a stage
		define string // the clustered kernels' (and gemm_wgp_*'s) #define of their shared memory
		shared int
		extra  int // bytes after the stages and the alignment's 1024
	}{
		{TCWG, "WG_BM", 0, "", wgShared, 0},
		{TCWG3, "WG3_BM", 0, "", wg3Shared, 0},
		{TCWGM, "WG_BM", 16, "#define WGM_SHARED (WG_SHARED + 16 * WG_STAGES)", wgmShared, 0},
		{TCWGM3, "WG3_BM", 16, "#define WGM3_SHARED (WG3_SHARED + 16 * WG_STAGES)", wgm3Shared, 0},
		{TCWGMS, "WG_BM", 16, "#define WGM_SHARED (WG_SHARED + 16 * WG_STAGES)", wgmShared, 0},
		{TCWGS, "WG_BM", 16, "#define WGM_SHARED (WG_SHARED + 16 * WG_STAGES)", wgmShared, 0},
		{TCWGP, "WG_BM", 0, "#define WGP_SHARED (WG_SHARED + 16)", wgpShared, 16},
	} {
		c, _, _ := wgChoice(TF32, tc.k)
		if got := def("WG_STAGES")*((def(tc.bm)+def("WG_BN"))*128+tc.bars) + 1024 + tc.extra; got != tc.shared || c.shared != tc.shared {
			t.Errorf("gemm_wg.cu's shared memory with %s is %d bytes, the backend launches %s with %d", tc.bm, got, c.name, c.shared)
		}
		if tc.define != "" && !bytes.Contains(src, []byte(tc.define)) {
			t.Errorf("gemm_wg.cu lacks %q (%s's shared memory: two mbarriers a stage more)", tc.define, c.name)
		}
		if def(tc.bm) != c.tileM || def("WG_BN") != c.tileN {
			t.Errorf("gemm_wg.cu's tile %d x %d, wgChoice's %s %d x %d", def(tc.bm), def("WG_BN"), c.name, c.tileM, c.tileN)
		}
	}
}

// TestTC2SharedConstants checks that tc2SharedTF32 and tc2SharedBF16 are
// gemm_tc.cu's TC2_SHARED_TF32 and TC2_SHARED_BF16.
func TestTC2SharedConstants(t *testing.T) {
	src := kernelSource(t, "gemm_tc.cu")
	for name, want := range map[string]int{"TC2_SHARED_TF32": tc2SharedTF32, "TC2_SHARED_BF16": tc2SharedBF16} {
		if got := kernelDefine(t, src, "gemm_tc.cu", name); got != want {
			t.Errorf("gemm_tc.cu: %s = %d, the backend launches with %d", name, got, want)
		}
	}
}

// TestGemmKernelChoice checks which kernel a backend's products use by
// precision, TCKernel and the device's shared memory: gemm_tc2_* under
// TCAuto where the opt-in limit allows it (an A100's 163 KiB: TF32 only;
// an H100's 227 KiB: both), else gemm_tf32/gemm_bf16.
func TestGemmKernelChoice(t *testing.T) {
	for _, tc := range []struct {
		optIn int
		k     TCKernel
		p     Precision
		want  string
	}{
		{163 << 10, TCAuto, TF32, "gemm_tc3_tf32"}, {163 << 10, TCAuto, BF16, "gemm_bf16"}, {227 << 10, TCAuto, BF16, "gemm_tc2_bf16"},
		{163 << 10, TCV2, TF32, "gemm_tc2_tf32"}, {227 << 10, TCAuto, TF32, "gemm_tc3_tf32"},
		{227 << 10, TCV1, TF32, "gemm_tf32"}, {227 << 10, TCV1, BF16, "gemm_bf16"}, {100 << 10, TCAuto, TF32, "gemm_tf32"},
		{100 << 10, TCV2, TF32, "gemm_tc2_tf32"}, {227 << 10, TCAuto, FP32, "sgemm_f32"}, {-1, TCAuto, TF32, "gemm_tf32"},
		{227 << 10, TCV3, TF32, "gemm_tc3_tf32"}, {227 << 10, TCV3, BF16, "gemm_tc2_bf16"},
	} {
		g := &optInHost{Host: cudatest.NewHost(), max: tc.optIn}
		be, err := newBackend(g, 32)
		if err != nil {
			t.Fatal(err)
		}
		be.SetPrecision(tc.p)
		be.SetTCKernel(tc.k)
		if got := be.gemmKernelName(); got != tc.want {
			t.Errorf("opt-in limit %d, %v, %v: kernel %s, want %s", tc.optIn, tc.k, tc.p, got, tc.want)
		}
		if shared := map[string]int{"gemm_tc2_tf32": tc2SharedTF32, "gemm_tc3_tf32": tc3SharedTF32}[tc.want]; shared > 0 && tc.optIn >= shared && g.opted[tc.want] != shared {
			t.Errorf("opt-in limit %d: %s opted in for %v bytes, want %d", tc.optIn, tc.want, g.opted, shared)
		}
	}
}

// TestGemmKernelBySize checks gemmFor: under TCAuto on compute capability
// 9.0 the TF32 and BF16 products whose sides are all at least wgAutoMin
// run with gemm_wg_tf32 or gemm_wg_bf16, every other product with
// gemmLaunch's kernel (other devices, other TCKernels, FP32, smaller
// sides, a device that refuses the shared memory).
func TestGemmKernelBySize(t *testing.T) {
	const big = wgAutoMin
	for _, tc := range []struct {
		cc, optIn int
		k         TCKernel
		p         Precision
		m, n, kk  int
		want      string
	}{
		{90, 227 << 10, TCAuto, TF32, big, big, big, "gemm_wg_tf32"},
		{90, 227 << 10, TCAuto, BF16, 4096, big, 3 * big, "gemm_wg_bf16"},
		{90, 227 << 10, TCAuto, TF32, big - 1, big, big, "gemm_tc3_tf32"},
		{90, 227 << 10, TCAuto, TF32, big, big, big / 2, "gemm_tc3_tf32"},
		{90, 227 << 10, TCAuto, BF16, big, 64, big, "gemm_tc2_bf16"},
		{90, 227 << 10, TCAuto, FP32, big, big, big, "sgemm_f32"},
		{90, 227 << 10, TCV3, TF32, big, big, big, "gemm_tc3_tf32"},
		{90, 227 << 10, TCWG3, TF32, 64, 64, 64, "gemm_wg3_tf32"},
		{90, 180 << 10, TCAuto, TF32, big, big, big, "gemm_tc3_tf32"}, // gemm_wg_tf32 needs 193 KiB
		{80, 163 << 10, TCAuto, TF32, big, big, big, "gemm_tc3_tf32"},
		{0, 227 << 10, TCAuto, TF32, big, big, big, "gemm_tc3_tf32"},
	} {
		be, err := newBackend(&optInHost{Host: cudatest.NewHost(), max: tc.optIn}, 32)
		if err != nil {
			t.Fatal(err)
		}
		be.cc = tc.cc
		be.SetPrecision(tc.p)
		be.SetTCKernel(tc.k)
		g := tensor.GemmArgs{M: tc.m, N: tc.n, K: tc.kk, Batch: 1}
		if got := be.gemmFor(g).name; got != tc.want {
			t.Errorf("sm %d, opt-in %d, %v, %v, %d x %d x %d: kernel %s, want %s", tc.cc, tc.optIn, tc.k, tc.p, tc.m, tc.n, tc.kk, got, tc.want)
		}
	}
}

// optInHost is a host GPU with an opt-in shared memory limit (max; -1:
// MaxSharedOptIn fails), recording the kernels opted in.
type optInHost struct {
	*cudatest.Host
	max   int
	opted map[string]int
}

func (h *optInHost) MaxSharedOptIn() (int, error) {
	if h.max < 0 {
		return 0, fmt.Errorf("no attribute")
	}
	return h.max, nil
}

func (h *optInHost) OptInShared(m *kc.Module, kernel string, bytes int) error {
	if bytes > h.max {
		return fmt.Errorf("%s: %d bytes beyond %d", kernel, bytes, h.max)
	}
	if h.opted == nil {
		h.opted = map[string]int{}
	}
	h.opted[kernel] = bytes
	return nil
}

// TestPrecisionDefault checks, where a GPU (or the fake driver) is
// usable, the precision of the registered backend: $DUEL_CUDA_PRECISION
// when set (FP32 below compute capability 8.0), else FP32.
func TestPrecisionDefault(t *testing.T) {
	d := needGPU(t)
	be, err := Registered()
	if err != nil {
		t.Fatal(err)
	}
	want, err := DefaultPrecision()
	if err != nil {
		t.Fatal(err)
	}
	wantConv, err := DefaultConvPrecision()
	if err != nil {
		t.Fatal(err)
	}
	if d.Capability() < 80 {
		want, wantConv = FP32, FP32
	}
	t.Logf("registered backend on %v: %v, convolutions %v (%s=%q, %s=%q)", d, be.Precision(), be.ConvPrecision(),
		EnvPrecision, os.Getenv(EnvPrecision), EnvConvPrecision, os.Getenv(EnvConvPrecision))
	if be.Precision() != want || be.ConvPrecision() != wantConv {
		t.Errorf("registered backend's precision %v, convolutions %v; want %v, %v", be.Precision(), be.ConvPrecision(), want, wantConv)
	}
}

// TestTimeGemm times a small product in each precision (GPU only).
func TestTimeGemm(t *testing.T) {
	d := needGPU(t)
	for _, p := range []Precision{FP32, TF32, BF16} {
		r, err := TimeGemm(65, 70, 33, false, true, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", r)
		want := p
		if d.Capability() < 80 {
			want = FP32
		}
		kernels := map[Precision][]string{FP32: {"sgemm_f32"}, TF32: {"gemm_tc3_tf32", "gemm_tf32"}, BF16: {"gemm_tc2_bf16", "gemm_bf16"}}[want]
		if r.Precision != want || r.Reps < 3 || r.PerCall <= 0 || r.GFLOPS <= 0 || r.Device != d.String() || !slices.Contains(kernels, r.Kernel) {
			t.Errorf("TimeGemm in %v: %+v", p, r)
		}
		if peak, ok := d.PeakGFLOPS(r.Precision); r.Peak != peak || !ok && d.Capability() >= 80 && d.Capability() <= 90 && d.Capability() != 87 {
			t.Errorf("TimeGemm in %v: peak %v GFLOP/s, want the device's %v (known: %v; %d SMs at %d kHz)", p, r.Peak, peak, ok, d.sms, d.clock)
		}
	}
	if _, err := TimeGemm(0, 1, 1, false, false, FP32, 0); err == nil {
		t.Error("TimeGemm of an empty product: no error")
	}
}

// TestGemmPrecisionFakeDriver runs the GPU tests above in child processes
// with the fake libcuda (compute capability 8.0, the kernels on the
// emulator): the tensor-core kernels through Device, the driver bindings
// (the dynamic shared memory opt-in of gemm_tc2_tf32) and the PTX module
// of sm_80, the default precisions (FP32 products, TF32 convolutions),
// $DUEL_CUDA_PRECISION (tf32 and bf16: the convolutions follow) and
// $DUEL_CUDA_CONV_PRECISION; then TestGemmWGKernel at compute capability
// 9.0, where TCWG runs gemm_wg.cu's kernels. The children's products are
// gemmDriverCases (TestGemmPrecisionEmulated runs every case on every
// kernel).
func TestGemmPrecisionFakeDriver(t *testing.T) {
	lib := cudatest.FakeDriver(t)
	// The children are independent processes: they run in parallel, as
	// many at once as go test's -parallel (GOMAXPROCS) allows.
	t.Run("sm80", func(t *testing.T) {
		t.Parallel()
		out := runFake(t, lib, "^(TestGemmPrecisionKernel|TestPrecisionDefault|TestTimeGemm)$")
		for _, w := range []string{"--- PASS: TestTimeGemm", "--- PASS: TestGemmPrecisionKernel/tf32", "--- PASS: TestGemmPrecisionKernel/bf16", "--- PASS: TestGemmPrecisionKernel/fp32",
			"--- PASS: TestPrecisionDefault", "sm_80): fp32",
			// the fake device allows an A100's 163 KiB per block: gemm_tc3_tf32 and gemm_tc2_tf32 fit,
			// gemm_tc2_bf16 falls back to gemm_bf16
			"tf32 auto: kernel gemm_tc3_tf32", "tf32 v2: kernel gemm_tc2_tf32", "tf32 v1: kernel gemm_tf32", "bf16 auto: kernel gemm_bf16", "bf16 v1: kernel gemm_bf16"} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
		if strings.Contains(out, "--- SKIP") {
			t.Errorf("skipped with the fake driver:\n%s", out)
		}
		if w := "sm_80): fp32, convolutions tf32"; !strings.Contains(out, w) {
			t.Errorf("output lacks %q (the default: FP32 products, TF32 convolutions):\n%s", w, out)
		}
	})
	t.Run("wg-sm80", func(t *testing.T) {
		t.Parallel()
		if w, sm80 := "--- SKIP: TestGemmWGKernel/tf32", runFake(t, lib, "^TestGemmWGKernel$"); !strings.Contains(sm80, w) || strings.Contains(sm80, "kernel gemm_wg") {
			t.Errorf("gemm_wg.cu's kernels at compute capability 8.0: output lacks %q or names gemm_wg (sm_90a only):\n%s", w, sm80)
		}
	})
	// On an H100 (9.0): gemm_wg.cu's sm_90a module loads and its kernels
	// run, through the driver bindings, the opt-ins of 193 and 225 KiB and
	// launches.
	// TCAuto's measurement of gemm_wg.cu's kernels through Device's
	// events and the driver binding (gemm_tune.go).
	t.Run("tune-sm90", func(t *testing.T) {
		t.Parallel()
		tune := runFake(t, lib, "^TestGemmTuneKernel$", "DUEL_FAKE_CUDA_CC=90")
		for _, w := range []string{"--- PASS: TestGemmTuneKernel/tf32", "--- PASS: TestGemmTuneKernel/bf16", "tf32 130x300x72: kernel gemm_", "bf16 130x300x72: kernel gemm_",
			"gemm_wgp_tf32:", "gemm_wgs_bf16:"} {
			if !strings.Contains(tune, w) {
				t.Errorf("TCAuto's measurement at compute capability 9.0: output lacks %q:\n%s", w, tune)
			}
		}
	})
	// At 8.0 (an A100's 163 KiB): gemm_tc3_tf32 against gemm_tc2_tf32 and
	// gemm_tf32; in BF16 only gemm_bf16 fits, so nothing is measured.
	t.Run("tune-sm80", func(t *testing.T) {
		t.Parallel()
		tune := runFake(t, lib, "^TestGemmTuneKernel$")
		for _, w := range []string{"--- PASS: TestGemmTuneKernel/tf32", "--- PASS: TestGemmTuneKernel/bf16", "gemm_tc2_tf32:", "gemm_tf32:",
			"bf16 130x300x72: kernel gemm_bf16, medians map[], refused [] (reference gemm_bf16)"} {
			if !strings.Contains(tune, w) {
				t.Errorf("TCAuto's measurement at compute capability 8.0: output lacks %q:\n%s", w, tune)
			}
		}
	})
	t.Run("wg-sm90", func(t *testing.T) {
		t.Parallel()
		wg := runFake(t, lib, "^TestGemmWGKernel$", "DUEL_FAKE_CUDA_CC=90")
		for _, w := range []string{"tf32 wg: kernel gemm_wg_tf32", "bf16 wg: kernel gemm_wg_bf16", "tf32 wg3: kernel gemm_wg3_tf32", "bf16 wg3: kernel gemm_wg3_bf16",
			"tf32 wgm: kernel gemm_wgm_tf32", "bf16 wgm: kernel gemm_wgm_bf16", "tf32 wgm3: kernel gemm_wgm3_tf32", "bf16 wgm3: kernel gemm_wgm3_bf16",
			"tf32 wgms: kernel gemm_wgms_tf32", "bf16 wgms: kernel gemm_wgms_bf16", "tf32 wgs: kernel gemm_wgs_tf32", "bf16 wgs: kernel gemm_wgs_bf16",
			"tf32 wgp: kernel gemm_wgp_tf32", "bf16 wgp: kernel gemm_wgp_bf16", "--- PASS: TestGemmWGKernel/tf32", "--- PASS: TestGemmWGKernel/bf16"} {
			if !strings.Contains(wg, w) {
				t.Errorf("at compute capability 9.0: output lacks %q:\n%s", w, wg)
			}
		}
	})
	t.Run("precision-env", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ env, want string }{
			{EnvPrecision + "=tf32", "tf32, convolutions tf32"},
			{EnvPrecision + "=BF16", "bf16, convolutions bf16"},
			{EnvConvPrecision + "=fp32", "fp32, convolutions fp32"},
			{EnvConvPrecision + "=bf16", "fp32, convolutions bf16"},
		} {
			out := runFake(t, lib, "^TestPrecisionDefault$", tc.env)
			if w := "sm_80): " + tc.want; !strings.Contains(out, w) || !strings.Contains(out, "--- PASS: TestPrecisionDefault") {
				t.Errorf("with %s: output lacks %q:\n%s", tc.env, w, out)
			}
		}
	})
}

// capHost is a host GPU that reports a compute capability.
type capHost struct {
	*cudatest.Host
	cc int
}

func (h capHost) Capability() int { return h.cc }

// TestPrecisionSetting checks parsing, the default by compute capability
// and $DUEL_CUDA_PRECISION, and the FP32 fallback below compute
// capability 8.0, without a device.
func TestPrecisionSetting(t *testing.T) {
	for s, want := range map[string]Precision{"fp32": FP32, "TF32": TF32, " bf16": BF16} {
		if p, err := ParsePrecision(s); err != nil || p != want {
			t.Errorf("ParsePrecision(%q) = %v, %v; want %v", s, p, err, want)
		}
	}
	if _, err := ParsePrecision("fp16"); err == nil || !strings.Contains(err.Error(), "expected fp32, tf32 or bf16") {
		t.Errorf("ParsePrecision(fp16): %v", err)
	}
	t.Setenv(EnvPrecision, "")
	if p, err := DefaultPrecision(); err != nil || p != FP32 {
		t.Errorf("DefaultPrecision() = %v, %v; want fp32", p, err)
	}
	t.Setenv(EnvPrecision, "bf16")
	if p, err := DefaultPrecision(); err != nil || p != BF16 {
		t.Errorf("DefaultPrecision() with %s=bf16 = %v, %v", EnvPrecision, p, err)
	}
	t.Setenv(EnvPrecision, "half")
	if _, err := DefaultPrecision(); err == nil || !strings.Contains(err.Error(), EnvPrecision+`="half"`) {
		t.Errorf("DefaultPrecision with %s=half: %v", EnvPrecision, err)
	}
	for _, tc := range []struct {
		cc   int
		p    Precision
		want Precision
	}{{70, TF32, FP32}, {70, BF16, FP32}, {70, FP32, FP32}, {80, TF32, TF32}, {86, BF16, BF16}, {90, FP32, FP32}} {
		be, err := newBackend(capHost{cudatest.NewHost(), tc.cc}, 32)
		if err != nil {
			t.Fatal(err)
		}
		if be.Precision() != FP32 {
			t.Errorf("newBackend's precision %v, want FP32", be.Precision())
		}
		if got := be.SetPrecision(tc.p); got != tc.want || be.Precision() != tc.want {
			t.Errorf("sm_%d: SetPrecision(%v) = %v (Precision %v), want %v", tc.cc, tc.p, got, be.Precision(), tc.want)
		}
	}
}

// TestTCKernelSetting checks ParseTCKernel and $DUEL_CUDA_TC_KERNEL
// (DefaultTCKernel), without a device.
func TestTCKernelSetting(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want TCKernel
	}{{"auto", TCAuto}, {"V1", TCV1}, {" v2", TCV2}, {"v3", TCV3}, {"V4", TCV4}, {"WG", TCWG}, {"wg3 ", TCWG3}, {"wgm", TCWGM}, {"WGM3\n", TCWGM3}, {"Wgms", TCWGMS}, {"wgs", TCWGS}, {"WGP", TCWGP}} {
		if k, err := ParseTCKernel(tc.s); err != nil || k != tc.want {
			t.Errorf("ParseTCKernel(%q) = %v, %v; want %v", tc.s, k, err, tc.want)
		}
	}
	if _, err := ParseTCKernel("v5"); err == nil || !strings.Contains(err.Error(), "expected auto, v1, v2, v3, v4, wg, wg3, wgm, wgm3, wgms, wgs or wgp") {
		t.Errorf("ParseTCKernel(v5): %v", err)
	}
	for _, tc := range []struct {
		env  string
		want TCKernel
		err  string
	}{{"", TCAuto, ""}, {"v3", TCV3, ""}, {"fast", TCAuto, EnvTCKernel + `="fast"`}} {
		t.Setenv(EnvTCKernel, tc.env)
		k, err := DefaultTCKernel()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("DefaultTCKernel with %s=%q: %v, want an error naming %s", EnvTCKernel, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || k != tc.want {
			t.Errorf("DefaultTCKernel with %s=%q = %v, %v; want %v", EnvTCKernel, tc.env, k, err, tc.want)
		}
	}
}

// FuzzParseSettings: ParsePrecision, ParseTCKernel and parseStridedGrad
// accept exactly their names (any case, surrounding space) and name what
// they expect otherwise.
func FuzzParseSettings(f *testing.F) {
	for _, s := range []string{"fp32", " TF32", "bf16\n", "v3", "auto", "", "fp16", "v4", "v5", "\x00", "dcol", " PHASES", "phase"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name := strings.ToLower(strings.TrimSpace(s))
		if p, err := ParsePrecision(s); err != nil {
			if !strings.Contains(err.Error(), "expected fp32, tf32 or bf16") {
				t.Errorf("ParsePrecision(%q): %v", s, err)
			}
		} else if p.String() != name {
			t.Errorf("ParsePrecision(%q) = %v", s, p)
		}
		if k, err := ParseTCKernel(s); err != nil {
			if !strings.Contains(err.Error(), "expected auto, v1, v2, v3, v4, wg, wg3, wgm, wgm3, wgms, wgs or wgp") {
				t.Errorf("ParseTCKernel(%q): %v", s, err)
			}
		} else if !strings.EqualFold(k.String(), strings.TrimSpace(s)) {
			t.Errorf("ParseTCKernel(%q) = %v", s, k)
		}
		if phases, err := parseStridedGrad(s); err != nil {
			if name == "dcol" || name == "phases" || !strings.Contains(err.Error(), "expected dcol or phases") {
				t.Errorf("parseStridedGrad(%q): %v", s, err)
			}
		} else if phases != (name == "phases") || name != "dcol" && name != "phases" {
			t.Errorf("parseStridedGrad(%q) = %v", s, phases)
		}
	})
}
