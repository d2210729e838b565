package igemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// TestKernels compares every available kernel with the reference on
// random, odd (k odd, n not a multiple of NR, m not a multiple of MR) and
// zero sizes, with values up to the grid's 2048 in magnitude, beyond it up
// to 4096, and constant extremes (every product +-4096*4096, the largest
// sums the tiles see here), one and several goroutines.
func TestKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	type fill func(n int) []int16
	uniform := func(span int) fill {
		return func(n int) []int16 { return randInt16(rng, n, span) }
	}
	constant := func(x int16) fill {
		return func(n int) []int16 {
			v := make([]int16, n)
			for i := range v {
				v[i] = x
			}
			return v
		}
	}
	signs := func(x int16) fill { // +-x at random
		return func(n int) []int16 {
			v := make([]int16, n)
			for i := range v {
				v[i] = x * int16(1-2*rng.IntN(2))
			}
			return v
		}
	}
	fills := []struct {
		name string
		a, b fill
	}{
		{"grid", uniform(2049), uniform(2049)},
		{"4096", uniform(4097), uniform(4097)},
		{"max+", constant(4096), constant(4096)},
		{"max-", constant(-4096), constant(4096)},
		{"2048±", signs(2048), signs(2048)},
		{"4096±", signs(4096), constant(-4096)},
	}
	shapes := [][3]int{
		{0, 0, 0}, {8, 48, 0}, {0, 48, 8}, {8, 0, 8}, {1, 1, 1}, {8, 48, 1},
		{8, 48, 2}, {8, 48, 3}, {7, 48, 4}, {8, 47, 4}, {9, 49, 7}, {15, 95, 63},
		{16, 96, 256}, {23, 145, 257}, {64, 480, 128}, {3, 200, 511},
	}
	for range 8 {
		shapes = append(shapes, [3]int{rng.IntN(50), rng.IntN(250), rng.IntN(400)})
	}
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for _, f := range fills {
			t.Run(fmt.Sprintf("%dx%dx%d/%s", m, n, k, f.name), func(t *testing.T) {
				lda, ldb, ldc := k+rng.IntN(2), k+rng.IntN(2), n+rng.IntN(2)
				a := f.a(max(0, m*lda))
				b := f.b(max(0, n*ldb))
				want := make([]int32, m*ldc)
				refMul(want, ldc, a, lda, b, ldb, m, n, k)
				var p Packed
				p.Pack(b, ldb, n, k)
				for _, kn := range available {
					for _, threads := range []int{1, 2} {
						got := make([]int32, m*ldc)
						mulThreads(got, ldc, a, lda, m, []*Packed{&p}, kn, threads)
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								if g, w := got[i*ldc+j], want[i*ldc+j]; g != w {
									t.Fatalf("%v, %d threads: c[%d][%d] = %d, want %d", kn, threads, i, j, g, w)
								}
							}
						}
					}
				}
			})
		}
	}
}

// TestKernelTile runs each assembly kernel on one tile written in place
// into a larger C (ldc > NR), checking the tile against the reference and
// that nothing around it is written.
func TestKernelTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, kn := range available {
		if kn == kernGeneric {
			continue
		}
		for _, kp := range []int{0, 1, 2, 3, 64, 129} {
			k, lda, ldc := 2*kp, 2*kp+3, NR+5
			a := randInt16(rng, MR*lda, 4097)
			b := randInt16(rng, NR*k, 4097)
			var p Packed
			p.Pack(b, k, NR, k)
			want := make([]int32, MR*ldc)
			refMul(want, ldc, a, lda, b, k, MR, NR, k)
			got := make([]int32, MR*ldc+1)
			for i := range got {
				got[i] = -9
			}
			dots(kn, kp, a, lda, p.data, got, ldc)
			for i := range got {
				w := int32(-9)
				if i < MR*ldc && i%ldc < NR {
					w = want[i]
				}
				if got[i] != w {
					t.Fatalf("%v kp=%d: c[%d][%d] = %d, want %d", kn, kp, i/ldc, i%ldc, got[i], w)
				}
			}
		}
	}
}

// TestKernelChoice checks the dispatch: the active kernel is the first
// available one, the pure-Go kernel is always available (last), DUEL_ISA
// generic (gemm.ISA) leaves only it and makes Accelerated false, and the
// VNNI kernel runs only with gemm.ISA avx512.
func TestKernelChoice(t *testing.T) {
	if active != available[0] || available[len(available)-1] != kernGeneric {
		t.Fatalf("active %v, available %v", active, available)
	}
	if Accelerated() != (active != kernGeneric) || Kernel() != active.String() {
		t.Fatalf("Accelerated() = %v, Kernel() = %q with active %v", Accelerated(), Kernel(), active)
	}
	isa := gemm.ISA()
	if isa == "generic" && (Accelerated() || Kernel() != "generic") {
		t.Fatalf("ISA generic: Accelerated() = %v, Kernel() = %q", Accelerated(), Kernel())
	}
	if isa != "avx512" && Kernel() == "avx512-vnni" {
		t.Fatalf("ISA %s runs the VNNI kernel", isa)
	}
	t.Logf("gemm.ISA() = %s, Kernel() = %s, available %v", isa, Kernel(), available)
}
