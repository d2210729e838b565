package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestShortKernels checks each reduced-row micro-kernel (kernel.short)
// against the definition on the first r rows of a packed panel, with odd
// kc, beta 0 over NaNs and B read with a stride, and that it leaves the
// rows past r and the columns past nr alone. Its rows must also be bit for
// bit those of the full tile: the same FMAs in the same order.
func TestShortKernels(t *testing.T) {
	for _, kn := range available {
		if kn.short == nil {
			continue
		}
		r := rand.New(rand.NewPCG(13, 14))
		for rows := 1; rows < kn.mr; rows++ {
			for _, kc := range []int{1, 3, 4, 7, 64, 433} {
				for _, beta := range []float32{0, 1, -0.5} {
					ldb, ldc := kn.nr+3, kn.nr+5
					a, b := randSlice(r, kc*kn.mr), randSlice(r, kc*ldb)
					c := randSlice(r, kn.mr*ldc)
					if beta == 0 {
						for i := range c {
							c[i] = float32(math.NaN())
						}
					}
					full := append([]float32(nil), c...)
					got := append([]float32(nil), c...)
					kn.micro(kc, &a[0], &b[0], &full[0], ldb, ldc, beta)
					kn.short[rows](kc, &a[0], &b[0], &got[0], ldb, ldc, beta)
					for i := 0; i < kn.mr; i++ {
						for j := 0; j < ldc; j++ {
							g := math.Float32bits(got[i*ldc+j])
							want := math.Float32bits(c[i*ldc+j])
							if i < rows && j < kn.nr {
								want = math.Float32bits(full[i*ldc+j])
							}
							if g != want {
								t.Fatalf("%s rows=%d kc=%d beta=%v: C[%d,%d] = %v, want %v", kn.name, rows, kc, beta, i, j, got[i*ldc+j], math.Float32frombits(want))
							}
						}
					}
				}
			}
		}
	}
}

// TestTilesBitIdentical checks what the package documentation says of
// determinism: with the same kc, the assembly kernels (every tile, AVX2 or
// AVX-512) and any mc, nc and ns give the same bits.
func TestTilesBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	p := newProblem(r, false, false, 300, 257, 1000, 0, 1, 0.5)
	var first []float32
	var firstName string
	for _, kn := range available {
		if kn.name == "generic" {
			continue // Go does not fuse the multiply and the add
		}
		for _, f := range []int{4, 10} {
			k := kn.withBlocking(blocking{mc: kn.mr * f, kc: 432, nc: kn.nr * 2 * f, ns: kn.nr * f})
			k.narrow = nil
			q := p
			q.c = append([]float32(nil), p.c...)
			sgemm(k, q, 2)
			if first == nil {
				first, firstName = q.c, kn.name
				continue
			}
			for j := range q.c {
				if math.Float32bits(q.c[j]) != math.Float32bits(first[j]) {
					t.Fatalf("%s (blocks x%d) differs from %s at %d: %v vs %v", kn.name, f, firstName, j, q.c[j], first[j])
				}
			}
		}
	}
}
