package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// transposeSentinel fills colT before a transposition: every entry outside
// the band must keep it.
const transposeSentinel = -0x5a5a5a5a

// TestTransposeBand compares transposeBand (the kernel DUEL_ISA selects)
// and every variant this CPU runs (transposeVariants: the Go loop,
// AVX-512, AVX2) with transposeBandGo on odd, zero and typical shapes,
// bands that start anywhere, and checks that colT outside the band is
// untouched.
func TestTransposeBand(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tests := []struct{ k, b, extra, bp0, bp1 int }{
		{0, 0, 0, 0, 0},
		{0, 16, 0, 0, 16},
		{5, 0, 3, 0, 0},
		{16, 16, 0, 0, 16},
		{16, 16, 0, 16, 16},
		{16, 32, 16, 0, 32},
		{17, 33, 0, 0, 33},
		{2048, 48, 48, 16, 32},
		{2048, 64, 0, 15, 48},
		{100, 256, 256, 240, 256},
		{4096, 32, 32, 0, 32},
	}
	for _, k := range []int{0, 1, 15, 16, 17, 100, 2048} {
		for _, n := range []int{0, 1, 15, 16, 17, 33} {
			b := n + rng.IntN(40)
			bp0 := rng.IntN(b - n + 1)
			if rng.IntN(2) == 0 {
				bp0 &^= 15
			}
			tests = append(tests, struct{ k, b, extra, bp0, bp1 int }{k, b, rng.IntN(20), bp0, bp0 + n})
		}
	}
	variants := append([]variant[transposeFunc]{{"transposeBand", transposeKernel}}, transposeVariants()...)
	for _, tt := range tests {
		for _, v := range variants {
			t.Run(fmt.Sprintf("k%d/b%d/w+%d/%d-%d/%s", tt.k, tt.b, tt.extra, tt.bp0, tt.bp1, v.name), func(t *testing.T) {
				w := tt.k + tt.extra
				dots := make([]int32, tt.b*w)
				for i := range dots {
					dots[i] = int32(rng.Uint32())
				}
				want := make([]int32, tt.k*tt.b)
				for i := range want {
					want[i] = transposeSentinel
				}
				got := slices.Clone(want)
				transposeBandGo(want, dots, tt.k, tt.b, w, tt.bp0, tt.bp1)
				transposeBandWith(v.kern, got, dots, tt.k, tt.b, w, tt.bp0, tt.bp1)
				for c := 0; c < tt.k; c++ {
					for bp := 0; bp < tt.b; bp++ {
						exp := int32(transposeSentinel)
						if bp >= tt.bp0 && bp < tt.bp1 {
							exp = dots[bp*w+c]
						}
						if want[c*tt.b+bp] != exp {
							t.Fatalf("transposeBandGo: colT[%d*%d+%d] = %d, want %d", c, tt.b, bp, want[c*tt.b+bp], exp)
						}
						if got[c*tt.b+bp] != exp {
							t.Fatalf("%s: colT[%d*%d+%d] = %d, want %d", v.name, c, tt.b, bp, got[c*tt.b+bp], exp)
						}
					}
				}
			})
		}
	}
}

// TestTransposeBandShortSlices runs every transposition variant on slices of exactly the
// documented minimum lengths (dots ending at column k of row bp1-1, as
// when a band of columns is taken from the middle of wider rows; colT at
// (k-1)*b + bp1), so that a kernel reading or writing past them would
// fault or be caught by the checks.
func TestTransposeBandShortSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{16, 17, 24, 48, 2048} {
		for _, w := range []int{k, k + 64} {
			b, bp0, bp1 := 64, 32, 64
			dots := make([]int32, (bp1-1)*w+k)
			for i := range dots {
				dots[i] = int32(rng.Uint32())
			}
			want := make([]int32, (k-1)*b+bp1)
			transposeBandGo(want, dots, k, b, w, bp0, bp1)
			for _, v := range transposeVariants() {
				got := make([]int32, (k-1)*b+bp1)
				transposeBandWith(v.kern, got, dots, k, b, w, bp0, bp1)
				if !slices.Equal(got, want) {
					t.Fatalf("k=%d, w=%d: %s differs from transposeBandGo", k, w, v.name)
				}
			}
		}
	}
}

// TestTransposeBandPanics checks that arguments outside the documented
// requirements panic rather than write out of place.
func TestTransposeBandPanics(t *testing.T) {
	tests := []struct {
		name              string
		colT, dots        int
		k, b, w, bp0, bp1 int
	}{
		{"bp0>bp1", 64, 64, 4, 16, 4, 5, 4},
		{"bp1>b", 64, 100, 4, 16, 4, 0, 17},
		{"k>w", 64, 64, 5, 16, 4, 0, 1},
		{"short dots", 64, 63, 4, 16, 4, 0, 16},
		{"short colT", 63, 64, 4, 16, 4, 0, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			transposeBand(make([]int32, tt.colT), make([]int32, tt.dots), tt.k, tt.b, tt.w, tt.bp0, tt.bp1)
		})
	}
}

// BenchmarkTransposeBand transposes a whole batch (K = 2048, B = 256,
// W = K+B) in bands of 16 rows, as the update does, with every variant
// this CPU runs (transposeVariants: "go" is transposeBandGo). Each
// assembly variant reports its speed-up over the Go run timed just before
// it in the same process (same number of bands).
//
//	go test -run=^$ -bench=BenchmarkTransposeBand ./duel/memory
func BenchmarkTransposeBand(b *testing.B) {
	const k, bb, w = 2048, 256, 2048 + 256
	dots := make([]int32, bb*w)
	for i := range dots {
		dots[i] = int32(i)
	}
	colT := make([]int32, k*bb)
	var goNs float64
	for _, v := range transposeVariants() {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				for bp := 0; bp < bb; bp += 16 {
					transposeBandWith(v.kern, colT, dots, k, bb, w, bp, bp+16)
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if v.kern == nil {
				goNs = ns
			} else if goNs > 0 {
				b.ReportMetric(goNs/ns, "speedup")
			}
		})
	}
}
