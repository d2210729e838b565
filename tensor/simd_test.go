package tensor

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/duel-ssl/duel/internal/floattest"
)

// simdValues returns n values from r with some specials mixed in.
func simdValues(seed uint64, n int) []float32 {
	r := rng(seed)
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -3e-39, math.MaxFloat32}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * 4)
		if r.IntN(20) == 0 {
			v[i] = special[r.IntN(len(special))]
		}
	}
	return v
}

var simdLengths = []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 1031}

// TestSIMDKernels checks every AVX2 kernel against its Go loop, bit for
// bit, on odd and zero lengths, unaligned starts, special values and in
// place.
func TestSIMDKernels(t *testing.T) {
	if !useAVX2 {
		t.Skip("AVX2 kernels not in use (CPU, noasm build or DUEL_ISA=generic)")
	}
	binOps := []BinaryOp{OpAdd, OpSub, OpMul, OpDiv}
	for _, n := range simdLengths {
		for _, off := range []int{0, 1, 3} {
			a := simdValues(uint64(n), n+off)[off:]
			b := simdValues(uint64(n)+99, n+off)[off:]
			s := float32(-1.75)
			for _, op := range binOps {
				cases := []struct {
					name       string
					asm, plain func(d []float32)
				}{
					{"VV", func(d []float32) { binaryVV(op, d, a, b) }, func(d []float32) { binaryVVGo(op, d, a, b) }},
					{"VS", func(d []float32) { binaryVS(op, d, a, s) }, func(d []float32) { binaryVSGo(op, d, a, s) }},
					{"SV", func(d []float32) { binarySV(op, d, s, b) }, func(d []float32) { binarySVGo(op, d, s, b) }},
				}
				for _, c := range cases {
					got, want := make([]float32, n), make([]float32, n)
					c.asm(got)
					c.plain(want)
					if i := floattest.FirstDiff(got, want); i >= 0 {
						t.Fatalf("%v%s n=%d off=%d: element %d = %v, Go loop gives %v", op, c.name, n, off, i, got[i], want[i])
					}
				}
			}
			// In place: d is a.
			for _, op := range binOps {
				got := append([]float32(nil), a...)
				want := make([]float32, n)
				binaryVV(op, got, got, b)
				binaryVVGo(op, want, a, b)
				if i := floattest.FirstDiff(got, want); i >= 0 {
					t.Fatalf("in-place %v n=%d: element %d = %v, want %v", op, n, i, got[i], want[i])
				}
			}
			for _, op := range []UnaryOp{OpRelu, OpAddScalar, OpMulScalar, OpSquare} {
				got, want := make([]float32, n), make([]float32, n)
				unaryVec(op, got, a, 0.3)
				unaryVecGo(op, want, a, 0.3)
				if i := floattest.FirstDiff(got, want); i >= 0 {
					t.Fatalf("%v n=%d off=%d: element %d of %v = %v, Go loop gives %v", op, n, off, i, a[i], got[i], want[i])
				}
			}
			y1 := append([]float32(nil), b...)
			y2 := append([]float32(nil), b...)
			axpy(0.7, a, y1)
			axpyGo(0.7, a, y2)
			if i := floattest.FirstDiff(y1, y2); i >= 0 {
				t.Fatalf("axpy n=%d off=%d: element %d = %v, want %v", n, off, i, y1[i], y2[i])
			}
			acc1, acc2 := make([]float64, n), make([]float64, n)
			for i := range acc1 {
				acc1[i], acc2[i] = float64(i), float64(i)
			}
			accumulate64AVX2(acc1, a)
			for i := range acc2 {
				acc2[i] += float64(a[i])
			}
			for i := range acc1 {
				if acc1[i] != acc2[i] && !(math.IsNaN(acc1[i]) && math.IsNaN(acc2[i])) {
					t.Fatalf("accumulate64 n=%d: element %d = %v, want %v", n, i, acc1[i], acc2[i])
				}
			}
			// sum64 adds in another order: compare finite inputs with a tolerance.
			fin := simdValues(uint64(n)+7, n)
			for i, v := range fin {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v == math.MaxFloat32 {
					fin[i] = 1
				}
			}
			got, want := sum64(fin), sum64Go(fin)
			if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("sum64 n=%d: %v, Go loop gives %v", n, got, want)
			}
		}
	}
	if s := sum64([]float32{float32(math.Inf(1)), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}); !math.IsInf(s, 1) {
		t.Errorf("sum64 with +Inf = %v", s)
	}
}

func BenchmarkSIMD(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 14, 1 << 20} {
		x, y := simdValues(1, n), simdValues(2, n)
		d := make([]float32, n)
		b.Run(fmt.Sprintf("addVV/n=%d/avx2", n), func(b *testing.B) {
			if !useAVX2 {
				b.Skip("no AVX2")
			}
			b.SetBytes(int64(12 * n))
			for b.Loop() {
				addVV(d, x, y)
			}
		})
		b.Run(fmt.Sprintf("addVV/n=%d/go", n), func(b *testing.B) {
			b.SetBytes(int64(12 * n))
			for b.Loop() {
				binaryVVGo(OpAdd, d, x, y)
			}
		})
		b.Run(fmt.Sprintf("sum64/n=%d/avx2", n), func(b *testing.B) {
			if !useAVX2 {
				b.Skip("no AVX2")
			}
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				sum64AVX2(x)
			}
		})
		b.Run(fmt.Sprintf("sum64/n=%d/go", n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				sum64Go(x)
			}
		})
	}
}

// TestGeneratedUpToDate checks that simd_binary_amd64.s is what
// gen_simd.go writes now.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out := filepath.Join(t.TempDir(), "gen.s")
	cmd := exec.Command(gobin, "run", "gen_simd.go", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen_simd.go: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("simd_binary_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("simd_binary_amd64.s is stale: run go generate in package tensor")
	}
}
