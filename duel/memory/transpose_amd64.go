//go:build amd64 && !noasm

package memory

import (
	"unsafe"

	"github.com/duel-ssl/duel/internal/cpu"
)

// transposeAVX512OK: the AVX-512 transposition runs (internal/cpu allows
// AVX-512: the CPU has it and DUEL_ISA does not ask for less than avx512).
var transposeAVX512OK = cpu.AllowAVX512()

// transposeAVX2OK: the AVX2 transposition runs (the AVX-512 one does not,
// and internal/cpu allows AVX2: DUEL_ISA does not ask for less than avx2).
var transposeAVX2OK = !transposeAVX512OK && cpu.AllowAVX2()

// transposeKernel is the assembly transposition transposeBand uses:
// AVX-512, else AVX2, else none (nil: the Go loop).
var transposeKernel = pickTransposeKernel()

// transposeCachedKernel is transposeKernel with regular stores only
// (transposeBandCached).
var transposeCachedKernel = pickTransposeCachedKernel()

// pickTransposeCachedKernel returns the regular-store transposition
// transposeAVX512OK and transposeAVX2OK select, or nil.
func pickTransposeCachedKernel() transposeFunc {
	switch {
	case transposeAVX512OK:
		return transposeTilesCached512
	case transposeAVX2OK:
		return transposeTilesCached2
	}
	return nil
}

// transposeTilesCached512 and transposeTilesCached2 run
// transposeTilesAVX512 and transposeTilesAVX2 on slices, with regular
// stores whatever the alignment.
func transposeTilesCached512(colT, dots []int32, n, b, w int) {
	if transposeArgsOK(colT, dots, n, b, w) {
		transposeTilesAVX512(unsafe.SliceData(colT), unsafe.SliceData(dots), n, b, w)
	}
}

func transposeTilesCached2(colT, dots []int32, n, b, w int) {
	if transposeArgsOK(colT, dots, n, b, w) {
		transposeTilesAVX2(unsafe.SliceData(colT), unsafe.SliceData(dots), n, b, w)
	}
}

// pickTransposeKernel returns the transposition transposeAVX512OK and
// transposeAVX2OK select, or nil.
func pickTransposeKernel() transposeFunc {
	switch {
	case transposeAVX512OK:
		return transposeTilesAsm512
	case transposeAVX2OK:
		return transposeTilesAsm2
	}
	return nil
}

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

// transposeTilesAVX2 is transposeTilesAVX512 (the same Go loop) with
// AVX2, n a multiple of 8: 16 rows by 8 columns at a time, as two 8x8
// tiles in ymm registers.
//
//go:noescape
func transposeTilesAVX2(colT, dots *int32, n, b, w int)

// transposeTilesNTAVX512 and transposeTilesNTAVX2 are transposeTilesAVX512
// and transposeTilesAVX2 with non-temporal stores (VMOVNTDQ), then an
// SFENCE; colT must be 64-byte aligned and b a multiple of 16 (see
// streams).
//
//go:noescape
func transposeTilesNTAVX512(colT, dots *int32, n, b, w int)

//go:noescape
func transposeTilesNTAVX2(colT, dots *int32, n, b, w int)

// streams reports whether the runs of a transposition into colT, b values
// apart, are whole 64-byte lines of memory (colT 64-byte aligned, b a
// multiple of 16), which the kernels then store non-temporally: the ring
// (see carried) is far larger than the cache and its runs are read back
// updates later, so that regular stores would read every line first (the
// ring's part of an update is 2 MB at (2048, 256, 256)) and evict what
// the cache holds for nothing.
func streams(colT []int32, b int) bool {
	return b%16 == 0 && uintptr(unsafe.Pointer(unsafe.SliceData(colT)))%64 == 0
}

// transposeArgsOK panics unless n is a multiple of 16, b >= 16 and both
// slices are long enough for the tiles, and reports whether n > 0.
func transposeArgsOK(colT, dots []int32, n, b, w int) bool {
	if n%16 != 0 || n < 0 || b < 16 || w < n ||
		n > 0 && (len(dots) < 15*w+n || len(colT) < (n-1)*b+16) {
		panic("memory: transposeTilesAsm: bad arguments")
	}
	return n > 0
}

// transposeTilesAsm512 runs transposeTilesAVX512 on slices: n a multiple
// of 16, b >= 16, and both slices long enough for the tiles;
// transposeTilesNTAVX512 when the runs are whole lines (streams).
func transposeTilesAsm512(colT, dots []int32, n, b, w int) {
	if !transposeArgsOK(colT, dots, n, b, w) {
		return
	}
	if streams(colT, b) {
		transposeTilesNTAVX512(unsafe.SliceData(colT), unsafe.SliceData(dots), n, b, w)
	} else {
		transposeTilesAVX512(unsafe.SliceData(colT), unsafe.SliceData(dots), n, b, w)
	}
}

// transposeTilesAsm2 runs transposeTilesAVX2 on slices: n a multiple of
// 16, b >= 16, and both slices long enough for the tiles;
// transposeTilesNTAVX2 when the runs are whole lines (streams).
func transposeTilesAsm2(colT, dots []int32, n, b, w int) {
	if !transposeArgsOK(colT, dots, n, b, w) {
		return
	}
	if streams(colT, b) {
		transposeTilesNTAVX2(unsafe.SliceData(colT), unsafe.SliceData(dots), n, b, w)
	} else {
		transposeTilesAVX2(unsafe.SliceData(colT), unsafe.SliceData(dots), n, b, w)
	}
}
