//go:build amd64 && !noasm

package gemm

import (
	"math/rand/v2"
	"testing"
)

// TestInterleaveAsm checks the scalar and AVX-512 interleaves against the Go
// loop for every width, odd strides and power-of-two ones.
func TestInterleaveAsm(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, w := range []int{6, 14, 16, 32} {
		for _, kc := range []int{1, 5, 16, 31, 48, 100} {
			for _, extra := range []int{0, 1, 17, 1024} {
				ld := kc + extra
				src := randSlice(r, (w-1)*ld+kc)
				want := make([]float32, kc*w)
				for p := 0; p < kc; p++ {
					for i := 0; i < w; i++ {
						want[p*w+i] = src[i*ld+p]
					}
				}
				variants := map[string]func(dst []float32) bool{
					"scalar": func(dst []float32) bool { return scalarInterleaveAsm(dst, src, w, ld, kc) },
				}
				if hasTranspose && kc >= 16 {
					variants["transpose"] = func(dst []float32) bool {
						return transposeAsm(dst, src, w, ld, kc&^15) &&
							(kc%16 == 0 || scalarInterleaveAsm(dst[(kc&^15)*w:], src[kc&^15:], w, ld, kc%16))
					}
				}
				for name, f := range variants {
					// One spare element after the panel must stay untouched.
					dst := make([]float32, kc*w+1)
					dst[kc*w] = 42
					if !f(dst[:kc*w]) {
						t.Fatalf("%s: no routine for w=%d", name, w)
					}
					for i := range want {
						if dst[i] != want[i] {
							t.Fatalf("%s w=%d kc=%d ld=%d: dst[%d] = %v, want %v", name, w, kc, ld, i, dst[i], want[i])
						}
					}
					if dst[kc*w] != 42 {
						t.Fatalf("%s w=%d kc=%d: wrote past the panel", name, w, kc)
					}
				}
			}
		}
	}
}
