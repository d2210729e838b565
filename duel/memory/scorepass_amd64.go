//go:build amd64 && !noasm

package memory

import (
	"unsafe"

	"github.com/duel-ssl/duel/kernels/gemm"
	"golang.org/x/sys/cpu"
)

// scoreAsm: the AVX-512 score pass runs (the CPU has AVX-512 F and DQ, and
// DUEL_ISA, read by kernels/gemm, does not ask for less than avx512).
var scoreAsm = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && gemm.ISA() == "avx512"

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

// scorePassAsm runs scorePassAVX512 on slices of equal length, a multiple
// of 8.
func scorePassAsm(score []float64, ins, del []int32, rank []int, pb *passBest) {
	n := len(score)
	if n%8 != 0 || len(ins) != n || len(del) != n || len(rank) != n {
		panic("memory: scorePassAsm: bad lengths")
	}
	if n == 0 {
		return
	}
	scorePassAVX512(n, unsafe.SliceData(score), unsafe.SliceData(ins), unsafe.SliceData(del), unsafe.SliceData(rank), pb)
}
