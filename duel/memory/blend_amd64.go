//go:build amd64 && !noasm

package memory

import (
	"unsafe"

	"github.com/duel-ssl/duel/kernels/gemm"
	"golang.org/x/sys/cpu"
)

// blendAsmOK: the AVX-512 blend runs (the CPU has AVX-512 F, and DUEL_ISA,
// read by kernels/gemm, does not ask for less than avx512).
var blendAsmOK = cpu.X86.HasAVX512F && gemm.ISA() == "avx512"

// blendAVX512 is blendRowGo on n entries, n a multiple of 16: sixteen at a
// time, the entries with tick > after are gathered (VPGATHERDD, masked)
// from src+4*base into the sixteen values of row, and the result is stored
// to dst. The caller prefetches what it knows to be cold (see prefetch):
// a first pass prefetching the src line of every entry measured about 2x
// slower with src in L1/L2 and no better than prefetching the ring's runs.
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

// blendAsm runs blendAVX512 on slices of equal length, a multiple of 16.
// The gathered indices are not checked (see blendRow).
func blendAsm(dst, row, src []int32, base int, idx, tick []int32, after int32) {
	n := len(dst)
	if n%16 != 0 || len(row) != n || len(idx) != n || len(tick) != n {
		panic("memory: blendAsm: bad lengths")
	}
	if n == 0 {
		return
	}
	blendAVX512(unsafe.SliceData(dst), unsafe.SliceData(row), unsafe.SliceData(src), base, unsafe.SliceData(idx), unsafe.SliceData(tick), after, n)
}

//go:noescape
func prefetchAVX512(p *int32, n int)

// prefetch asks for every cache line of v (PREFETCHT1: into L2), so that the misses
// of data about to be read overlap.
func prefetch(v []int32) {
	if blendAsmOK && len(v) > 0 {
		prefetchAVX512(unsafe.SliceData(v), len(v))
	}
}
