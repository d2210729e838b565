//go:build amd64 && !noasm

package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// aligned64 returns n int32 starting at a 64-byte boundary, plus off
// elements (off > 0: a start that is not aligned), all set to fill.
func aligned64(n, off int, fill int32) []int32 {
	buf := make([]int32, n+16+off)
	skip := int((64 - uintptr(unsafe.Pointer(&buf[0]))%64) % 64 / 4)
	s := buf[skip+off : skip+off+n]
	for i := range s {
		s[i] = fill
	}
	return s
}

// TestTransposeBandStreams runs the assembly transpositions (AVX-512,
// AVX2) where their runs are whole lines, so that they store them
// non-temporally (streams), and just off them (the regular stores), on
// odd and typical shapes, against transposeBandGo, entries outside the
// band untouched.
func TestTransposeBandStreams(t *testing.T) {
	var kerns []variant[transposeFunc]
	if cpu.X86.HasAVX512F {
		kerns = append(kerns, variant[transposeFunc]{"avx512", transposeTilesAsm512})
	}
	if cpu.X86.HasAVX2 {
		kerns = append(kerns, variant[transposeFunc]{"avx2", transposeTilesAsm2})
	}
	rng := rand.New(rand.NewPCG(7, 8))
	tests := []struct{ k, b, extra, bp0, bp1 int }{
		{16, 16, 0, 0, 16},
		{17, 32, 5, 16, 32},
		{48, 64, 0, 0, 64},
		{100, 48, 3, 16, 48},
		{2048, 256, 256, 32, 48},
		{2048, 4096, 256, 240, 256},
		{31, 4096, 1, 0, 17},
	}
	for _, v := range kerns {
		for _, tt := range tests {
			for _, off := range []int{0, 1, 4} {
				t.Run(fmt.Sprintf("%s/k%d/b%d/%d-%d/off%d", v.name, tt.k, tt.b, tt.bp0, tt.bp1, off), func(t *testing.T) {
					w := tt.k + tt.extra
					dots := make([]int32, tt.b*w)
					for i := range dots {
						dots[i] = int32(rng.Uint32())
					}
					want := aligned64(tt.k*tt.b, off, transposeSentinel)
					got := aligned64(tt.k*tt.b, off, transposeSentinel)
					if streams(got, tt.b) != (off == 0) {
						t.Fatalf("streams = %v at offset %d", !(off == 0), off)
					}
					transposeBandGo(want, dots, tt.k, tt.b, w, tt.bp0, tt.bp1)
					transposeBandWith(v.kern, got, dots, tt.k, tt.b, w, tt.bp0, tt.bp1)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("colT[%d] = %d, want %d", i, got[i], want[i])
						}
					}
				})
			}
		}
	}
}
