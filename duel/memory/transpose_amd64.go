//go:build amd64 && !noasm

package memory

import (
	"unsafe"

	"github.com/duel-ssl/duel/kernels/gemm"
	"golang.org/x/sys/cpu"
)

// transposeAsm: the AVX-512 transposition runs (the CPU has AVX-512 F, and
// DUEL_ISA, read by kernels/gemm, does not ask for less than avx512).
var transposeAsm = cpu.X86.HasAVX512F && gemm.ISA() == "avx512"

// transposeTilesAVX512 transposes n columns (n a multiple of 16) of 16
// rows, row r at dots + r*w, into n runs of 16 values, run c at
// colT + c*b (b and w in int32 elements), one 16x16 tile at a time. Its
// equivalent Go loop:
//
//	for r := 0; r < 16; r++ {
//		for c := 0; c < n; c++ {
//			colT[c*b+r] = dots[r*w+c]
//		}
//	}
//
//go:noescape
func transposeTilesAVX512(colT, dots *int32, n, b, w int)

// transposeTilesAsm runs transposeTilesAVX512 on slices: n a multiple of
// 16, b >= 16, and both slices long enough for the tiles.
func transposeTilesAsm(colT, dots []int32, n, b, w int) {
	if n%16 != 0 || n < 0 || b < 16 || w < n ||
		n > 0 && (len(dots) < 15*w+n || len(colT) < (n-1)*b+16) {
		panic("memory: transposeTilesAsm: bad arguments")
	}
	if n == 0 {
		return
	}
	transposeTilesAVX512(unsafe.SliceData(colT), unsafe.SliceData(dots), n, b, w)
}
