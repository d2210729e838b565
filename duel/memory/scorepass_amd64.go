//go:build amd64 && !noasm

package memory

import (
	"unsafe"

	"github.com/duel-ssl/duel/internal/cpu"
)

// scoreAVX512OK: the AVX-512 score pass runs (internal/cpu allows
// AVX-512: the CPU has it and DUEL_ISA does not ask for less than avx512).
var scoreAVX512OK = cpu.AllowAVX512()

// scoreAVX2OK: the AVX2 score pass runs (the AVX-512 one does not, and
// internal/cpu allows AVX2: DUEL_ISA does not ask for less than avx2).
var scoreAVX2OK = !scoreAVX512OK && cpu.AllowAVX2()

// scoreKernel is the assembly score pass scorePass uses: AVX-512, else
// AVX2, else none (nil: the Go loop).
var scoreKernel = pickScoreKernel()

// pickScoreKernel returns the score pass scoreAVX512OK and scoreAVX2OK
// select, or nil.
func pickScoreKernel() scoreFunc {
	switch {
	case scoreAVX512OK:
		return scorePassAsm512
	case scoreAVX2OK:
		return scorePassAsm2
	}
	return nil
}

// scorePassAVX512 is scorePassGo on n keys, n a multiple of 8, eight at a
// time (VPMAXSQ per lane, then across the lanes). Its equivalent Go loop:
//
//	best = math.MinInt64
//	for c := 0; c < n; c++ {
//		v := key[c] + (int64(ins[c])-int64(del[c]))<<shift
//		key[c] = v
//		if v > keyLive {
//			dsum += int64(ins[c])
//		}
//		best = max(best, v)
//	}
//
//go:noescape
func scorePassAVX512(n int, key *int64, ins, del *int32, shift uint) (best, dsum int64)

// scorePassAVX2 is scorePassAVX512 (the same Go loop) with AVX2: four keys
// per ymm, two ymm per step.
//
//go:noescape
func scorePassAVX2(n int, key *int64, ins, del *int32, shift uint) (best, dsum int64)

// scoreArgsOK panics unless the slices have equal lengths, a multiple of
// 8, and reports whether they are non-empty.
func scoreArgsOK(key []int64, ins, del []int32) bool {
	n := len(key)
	if n%8 != 0 || len(ins) != n || len(del) != n {
		panic("memory: scorePassAsm: bad lengths")
	}
	return n > 0
}

// scorePassAsm512 runs scorePassAVX512 on slices of equal length, a
// multiple of 8.
func scorePassAsm512(key []int64, ins, del []int32, shift uint) (best, dsum int64) {
	if !scoreArgsOK(key, ins, del) {
		return scorePassGo(key, ins, del, shift)
	}
	return scorePassAVX512(len(key), unsafe.SliceData(key), unsafe.SliceData(ins), unsafe.SliceData(del), shift)
}

// scorePassAsm2 runs scorePassAVX2 on slices of equal length, a multiple
// of 8.
func scorePassAsm2(key []int64, ins, del []int32, shift uint) (best, dsum int64) {
	if !scoreArgsOK(key, ins, del) {
		return scorePassGo(key, ins, del, shift)
	}
	return scorePassAVX2(len(key), unsafe.SliceData(key), unsafe.SliceData(ins), unsafe.SliceData(del), shift)
}
