//go:build amd64 && !noasm

package memory

import (
	"unsafe"

	"github.com/duel-ssl/duel/internal/cpu"
)

// blendAVX512OK: the AVX-512 blend runs (internal/cpu allows AVX-512:
// the CPU has it and DUEL_ISA does not ask for less than avx512).
var blendAVX512OK = cpu.AllowAVX512()

// blendAVX2OK: the AVX2 blend runs (the AVX-512 one does not, and
// internal/cpu allows AVX2: DUEL_ISA does not ask for less than avx2).
var blendAVX2OK = !blendAVX512OK && cpu.AllowAVX2()

// blendKernel is the assembly blend blendRow uses: AVX-512, else AVX2,
// else none (nil: the Go loop).
var blendKernel = pickBlendKernel()

// pickBlendKernel returns the blend blendAVX512OK and blendAVX2OK select,
// or nil.
func pickBlendKernel() blendFunc {
	switch {
	case blendAVX512OK:
		return blendAsm512
	case blendAVX2OK:
		return blendAsm2
	}
	return nil
}

// blendAVX512 is blendRowGo on n entries, n a multiple of 16: sixteen at a
// time, the entries with tick > after are gathered (VPGATHERDD, masked)
// from src+4*base into the sixteen values of row, and the result is stored
// to dst. The caller prefetches what it knows to be cold (see prefetch):
// a first pass prefetching the src line of every entry is slower with src
// in L1/L2, and no better than prefetching the ring's runs.
// Its equivalent Go loop:
//
//	for c := 0; c < n; c++ {
//		if tick[c] > after {
//			dst[c] = src[base+int(idx[c])]
//		} else {
//			dst[c] = row[c]
//		}
//	}
//
//go:noescape
func blendAVX512(dst, row, src *int32, base int, idx, tick *int32, after int32, n int)

// blendAVX2 is blendAVX512 (the same Go loop) with AVX2, eight entries at
// a time (VPGATHERDD with a vector mask); n a multiple of 8.
//
//go:noescape
func blendAVX2(dst, row, src *int32, base int, idx, tick *int32, after int32, n int)

// blendArgsOK panics unless the slices have equal lengths, a multiple of
// 16, and reports whether they are non-empty.
func blendArgsOK(dst, row, idx, tick []int32) bool {
	n := len(dst)
	if n%16 != 0 || len(row) != n || len(idx) != n || len(tick) != n {
		panic("memory: blendAsm: bad lengths")
	}
	return n > 0
}

// blendAsm512 runs blendAVX512 on slices of equal length, a multiple of
// 16. The gathered indices are not checked (see blendRow).
func blendAsm512(dst, row, src []int32, base int, idx, tick []int32, after int32) {
	if blendArgsOK(dst, row, idx, tick) {
		blendAVX512(unsafe.SliceData(dst), unsafe.SliceData(row), unsafe.SliceData(src), base, unsafe.SliceData(idx), unsafe.SliceData(tick), after, len(dst))
	}
}

// blendAsm2 runs blendAVX2 on slices of equal length, a multiple of 16.
// The gathered indices are not checked (see blendRow).
func blendAsm2(dst, row, src []int32, base int, idx, tick []int32, after int32) {
	if blendArgsOK(dst, row, idx, tick) {
		blendAVX2(unsafe.SliceData(dst), unsafe.SliceData(row), unsafe.SliceData(src), base, unsafe.SliceData(idx), unsafe.SliceData(tick), after, len(dst))
	}
}

// prefetchLines issues a PREFETCHT1 (into L2) for every 64-byte line of p[0:n],
// n > 0.
//
//go:noescape
func prefetchLines(p *int32, n int)

// prefetchOK: prefetch issues its PREFETCHT1s (beside an assembly blend;
// the Go loop runs without them).
var prefetchOK = blendKernel != nil

// prefetch asks for every cache line of v (PREFETCHT1: into L2), so that the misses
// of data about to be read overlap.
func prefetch(v []int32) {
	if prefetchOK && len(v) > 0 {
		prefetchLines(unsafe.SliceData(v), len(v))
	}
}
