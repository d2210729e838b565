//go:build amd64 && !noasm

package memory

import (
	"unsafe"

	"github.com/duel-ssl/duel/internal/cpu"
)

// scoreAVX512OK: the AVX-512 score pass runs (internal/cpu allows
// AVX-512, i.e. the CPU has it and DUEL_ISA does not ask for less than
// avx512, and the CPU has AVX-512 DQ).
var scoreAVX512OK = cpu.AllowAVX512() && cpu.Detect().AVX512DQ

// scoreAVX2OK: the AVX2 score pass runs (the AVX-512 one does not, and
// internal/cpu allows AVX2 and FMA: DUEL_ISA does not ask for less than
// avx2).
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

// scorePassAVX512 is scorePassGo on n slots, n a multiple of 8, eight
// lanes at a time (lane l: slots c with c%8 == l). Its equivalent Go loop:
//
//	for c := 0; c < n; c++ {
//		l := c % 8
//		s := score[c] + (float64(ins[c])-float64(del[c]))*qUnit
//		score[c] = s
//		if s > math.Inf(-1) {
//			pb.dsum[l] += float64(ins[c])
//		}
//		if s > pb.score[l] || s == pb.score[l] && rank[c] < pb.rank[l] {
//			pb.score[l], pb.rank[l], pb.slot[l] = s, rank[c], c
//		}
//	}
//
//go:noescape
func scorePassAVX512(n int, score *float64, ins, del *int32, rank *int, pb *passBest)

// scorePassAVX2 is scorePassAVX512 (the same Go loop, the same lanes) with
// AVX2 and FMA: the eight lanes in two ymm groups of four.
//
//go:noescape
func scorePassAVX2(n int, score *float64, ins, del *int32, rank *int, pb *passBest)

// scoreArgsOK panics unless the slices have equal lengths, a multiple of
// 8, and reports whether they are non-empty.
func scoreArgsOK(score []float64, ins, del []int32, rank []int) bool {
	n := len(score)
	if n%8 != 0 || len(ins) != n || len(del) != n || len(rank) != n {
		panic("memory: scorePassAsm: bad lengths")
	}
	return n > 0
}

// scorePassAsm512 runs scorePassAVX512 on slices of equal length, a
// multiple of 8, and returns the updated pb.
func scorePassAsm512(score []float64, ins, del []int32, rank []int, pb passBest) passBest {
	if scoreArgsOK(score, ins, del, rank) {
		scorePassAVX512(len(score), unsafe.SliceData(score), unsafe.SliceData(ins), unsafe.SliceData(del), unsafe.SliceData(rank), &pb)
	}
	return pb
}

// scorePassAsm2 runs scorePassAVX2 on slices of equal length, a multiple
// of 8, and returns the updated pb.
func scorePassAsm2(score []float64, ins, del []int32, rank []int, pb passBest) passBest {
	if scoreArgsOK(score, ins, del, rank) {
		scorePassAVX2(len(score), unsafe.SliceData(score), unsafe.SliceData(ins), unsafe.SliceData(del), unsafe.SliceData(rank), &pb)
	}
	return pb
}
