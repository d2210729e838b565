package conv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/kernels/vecmath"
)

// TestWinoKernels checks bt4 and at4 (AVX2 when available) against bt4Go
// and at4Go on zero, odd and long lengths and unaligned offsets: the
// results must be bit-identical (same operations in the same order).
func TestWinoKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 33, 100} {
		for _, off := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("%s-n%d-off%d", vecmath.ISA(), n, off), func(t *testing.T) {
				in := make([][]float32, 4)
				for i := range in {
					in[i] = randSlice(r, n+off+1)[off : off+n]
				}
				got, want := make([][]float32, 4), make([][]float32, 4)
				for i := range got {
					got[i], want[i] = make([]float32, n+1)[:n], make([]float32, n)
				}
				bt4(got[0], got[1], got[2], got[3], in[0], in[1], in[2], in[3])
				bt4Go(want[0], want[1], want[2], want[3], in[0], in[1], in[2], in[3])
				for i := range got {
					if !slices.Equal(got[i], want[i]) {
						t.Fatalf("bt4 output %d: %v, want %v", i, got[i], want[i])
					}
				}
				at4(got[0], got[1], in[0], in[1], in[2], in[3])
				at4Go(want[0], want[1], in[0], in[1], in[2], in[3])
				for i := range 2 {
					if !slices.Equal(got[i], want[i]) {
						t.Fatalf("at4 output %d: %v, want %v", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// TestInterleave checks deinterleave and interleave, which place the
// even and odd columns of a row, on even and odd widths.
func TestInterleave(t *testing.T) {
	for w := 1; w <= 9; w++ {
		tw := (w + 1) / 2
		src := make([]float32, w)
		for i := range src {
			src[i] = float32(i + 1)
		}
		dst := make([]float32, 2*tw+2)
		deinterleave(dst, src)
		// Padded column c: image column c-1, zero outside the image.
		for c := range 2 * (tw + 1) {
			var v float32
			if c >= 1 && c <= w {
				v = src[c-1]
			}
			if got := dst[c%2*(tw+1)+c/2]; got != v {
				t.Fatalf("w %d: padded column %d = %v, want %v", w, c, got, v)
			}
		}
		row := make([]float32, w)
		e, o := make([]float32, tw), make([]float32, tw)
		for i := range tw {
			e[i], o[i] = float32(2*i), float32(2*i+1)
		}
		interleave(row, e, o, false)
		interleave(row, e, o, true)
		for x, v := range row {
			if v != float32(2*x) {
				t.Fatalf("w %d: row[%d] = %v, want %v", w, x, v, 2*x)
			}
		}
	}
}
