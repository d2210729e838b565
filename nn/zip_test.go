package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestZip checks zip, zipAdd and splitEvenOdd (AVX2 when available) bit
// for bit against zipGo, zipAddGo and unzipGo on zero, odd and vector-sized
// lengths, with destination rows longer than needed left untouched.
func TestZip(t *testing.T) {
	bits := func(t *testing.T, what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	for _, n := range []int{0, 1, 3, 7, 8, 9, 16, 17, 33} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(n), 21))
			e := randTensor(r, n+1).Data()[:n]
			o := randTensor(r, n+2).Data()[:n+1]
			row := randTensor(r, 2*n+3).Data()
			for _, tc := range []struct {
				name     string
				got, ref func(row, e, o []float32)
			}{{"zip", zip, zipGo}, {"zipAdd", zipAdd, zipAddGo}} {
				got := append([]float32(nil), row...)
				want := append([]float32(nil), row...)
				tc.got(got, e, o)
				tc.ref(want, e, o)
				bits(t, tc.name, got, want)
			}
			line := randTensor(r, 2*n+1).Data()
			ge, go_ := randTensor(r, n+1).Data(), randTensor(r, n+1).Data()
			we, wo := append([]float32(nil), ge...), append([]float32(nil), go_...)
			splitEvenOdd(ge[:n], go_, line)
			unzipGo(we[:n], wo, line)
			bits(t, "even", ge, we)
			bits(t, "odd", go_, wo)
		})
	}
}
