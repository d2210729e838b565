package memory

import "math"

// passBest is the outcome of one pass over the slots' scores: the sum of
// the incoming row's dots with every slot and, per lane, the best slot seen
// (highest score, ties to the lowest rank). Lane l covers the slots c with
// c%8 == l among the first n&^7, plus, in lane 0, the tail.
type passBest struct {
	score [8]float64
	rank  [8]int
	slot  [8]int
	dsum  [8]float64
}

// scorePass is one DUEL step over a run of rows (see replace): for every
// c < len(score),
//
//	score[c] += (ins[c] - del[c]) * qUnit
//
// and it returns the sum of ins over the rows held (those whose score is
// above -Inf: a row that left has score -Inf) and the row with the highest
// new score, ties to the lowest rank (-1 when every score is -Inf). The
// arithmetic is exact, so the result does not depend on the order: the
// assembly kernels (AVX-512 or AVX2, see scoreKernel) and the Go loop give
// the same bits.
func scorePass(score []float64, ins, del []int32, rank []int) (best int, dsum float64) {
	return scorePassWith(scoreKernel, score, ins, del, rank)
}

// scoreFunc is an assembly score pass: scorePassGo's loop from slot 0 on
// slices of equal length, a multiple of 8, lane l of pb taking the slots c
// with c%8 == l; it returns the updated pb (passed by value: a pointer
// through a func value would move scorePass's passBest to the heap).
type scoreFunc func(score []float64, ins, del []int32, rank []int, pb passBest) passBest

// scorePassWith is scorePass with kern on the first n&^7 slots and the Go
// loop on the rest (on all of them when kern is nil).
func scorePassWith(kern scoreFunc, score []float64, ins, del []int32, rank []int) (best int, dsum float64) {
	n := len(score)
	ins, del, rank = ins[:n], del[:n], rank[:n]
	var pb passBest
	for l := range pb.score {
		pb.score[l], pb.rank[l], pb.slot[l] = math.Inf(-1), math.MaxInt, -1
	}
	m := 0
	if kern != nil {
		m = n &^ 7
		pb = kern(score[:m], ins[:m], del[:m], rank[:m], pb)
	}
	scorePassGo(score[m:], ins[m:], del[m:], rank[m:], m, &pb)
	best = -1
	for l := range pb.score {
		dsum += pb.dsum[l]
		if pb.slot[l] >= 0 && (best < 0 || pb.score[l] > score[best] ||
			pb.score[l] == score[best] && pb.rank[l] < rank[best]) {
			best = pb.slot[l]
		}
	}
	if best >= 0 && math.IsInf(score[best], -1) {
		best = -1
	}
	return best, dsum
}

// scorePassGo is scorePass's loop in Go over slots base.., folding its
// results into lane 0 of pb.
func scorePassGo(score []float64, ins, del []int32, rank []int, base int, pb *passBest) {
	bs, br, bc := pb.score[0], pb.rank[0], pb.slot[0]
	var dsum float64
	for c, d := range ins {
		s := score[c] + (float64(d)-float64(del[c]))*qUnit
		score[c] = s
		if s > math.Inf(-1) {
			dsum += float64(d)
		}
		if s > bs || s == bs && rank[c] < br {
			bs, br, bc = s, rank[c], base+c
		}
	}
	pb.score[0], pb.rank[0], pb.slot[0] = bs, br, bc
	pb.dsum[0] += dsum
}
