package vecmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestZip checks Zip, ZipAdd and Unzip (AVX2 when available) bit
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
			e := randn(r, n+1)[:n]
			o := randn(r, n+2)[:n+1]
			row := randn(r, 2*n+3)
			for _, tc := range []struct {
				name     string
				got, ref func(row, e, o []float32)
			}{{"Zip", Zip, zipGo}, {"ZipAdd", ZipAdd, zipAddGo}} {
				got := append([]float32(nil), row...)
				want := append([]float32(nil), row...)
				tc.got(got, e, o)
				tc.ref(want, e, o)
				bits(t, tc.name, got, want)
			}
			line := randn(r, 2*n+1)
			ge, go_ := randn(r, n+1), randn(r, n+1)
			we, wo := append([]float32(nil), ge...), append([]float32(nil), go_...)
			Unzip(ge[:n], go_, line)
			unzipGo(we[:n], wo, line)
			bits(t, "even", ge, we)
			bits(t, "odd", go_, wo)
		})
	}
}

// randn returns n normal values.
func randn(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}
