package cudaduel

import (
	"math"

	"github.com/duel-ssl/duel/duel/memory"
)

// The kernels of kernels/cuda/duel.cu transcribed to Go, loop for loop, on
// the same grid and with the same double arithmetic. The tests run them
// everywhere against memory.DUEL (duelHost, TestDUELHost), which checks the
// algorithm the kernels implement on machines without a GPU, and the tests'
// cudatest.Host runs them in place of the kernels (hostKernels) to check
// Memory's buffers, offsets and launch parameters (TestDUELUpdateOnHost).

const (
	hostSel   = 1
	hostProt  = 2
	hostQUnit = 0x1p-23
)

// duelGridHost is duel_grid: g[e] = floor(2048*x[e] + 1/2).
func duelGridHost(g, x []float32) {
	for e, v := range x {
		g[e] = float32(math.Floor(float64(v)*2048 + 0.5))
	}
}

// duelScoresHost is duel_scores: score[j] = K/2 + 2^-23 * sum_{c<K}
// sim[j*w + c].
func duelScoresHost(score []float64, sim []float32, w, k int) {
	for j := range k {
		var s int64
		for _, d := range sim[j*w : j*w+k] {
			s += int64(d)
		}
		score[j] = 0.5*float64(k) + float64(s)*hostQUnit
	}
}

// duelBatchSumsHost is duel_batch_sums: p[i] = sum_{c<k+i} sim[(k+i)*w
// + c] for i < b.
func duelBatchSumsHost(p []int64, sim []float32, w, k, b int) {
	for i := range b {
		var s int64
		for _, d := range sim[(k+i)*w : (k+i)*w+k+i] {
			s += int64(d)
		}
		p[i] = s
	}
}

// The packed keys of duel.cu's selection (see "The packed selection"
// there): bit 63 a candidate, bit 62 not protected, then the biased
// integer score, then posMask - position.
const (
	hostKeyValid = uint64(1) << 63
	hostKeyFree  = uint64(1) << 62
)

// packKey is a candidate's key in duel.cu's packed selection: u the
// biased integer score (below 2^(62-bits)), pos its position (below
// 2^bits), free whether it is not protected.
func packKey(u uint64, pos, bits int, free bool) uint64 {
	posMask := uint64(1)<<bits - 1
	flags := hostKeyValid
	if free {
		flags |= hostKeyFree
	}
	return u<<bits | flags | (posMask - uint64(pos))
}

// duelSelectHost is duel_select_shared and duel_select_global (the
// packed selection): the b sequential steps on sim (row J of it holds
// J's dots with every position, w apart), from the scores scoreIn of the
// k rows held and the batch sums p (duel_batch_sums); it writes evicted
// (b), kept (k) and the kept rows' scores scoreOut (k). The kernel's
// threads split the positions and reduce their maxima; here one loop
// visits them in order and keeps the maximum (a maximum does not depend
// on the order).
func duelSelectHost(sim []float32, w, k, b int, protect bool, scoreIn []float64, p []int64, evicted, kept []int32, scoreOut []float64) {
	n := k + b
	bits := posBits(k, b)
	posMask := uint64(1)<<bits - 1
	off := uint64(k+2*b) << 24
	batchFlags := hostKeyValid | hostKeyFree
	if protect {
		batchFlags = hostKeyValid
	}
	u := make([]uint64, n)
	var best uint64
	for c := range n {
		var x uint64
		if c < k {
			x = off + uint64(int64((scoreIn[c]-0.5*float64(k))*0x1p23))
			best = max(best, x<<bits|hostKeyValid|hostKeyFree|(posMask-uint64(c)))
		} else {
			x = off + uint64(p[c-k])
		}
		u[c] = x
	}
	v := best
	for i := range b {
		J := int(posMask - v&posMask)
		top := k + i
		del, ins := sim[J*w:], sim[top*w:]
		evicted[i] = int32(J)
		best = 0
		for c := range n {
			x := u[c]
			dj := int32(del[c])
			if c > top {
				u[c] = x - uint64(int64(dj))
				continue
			}
			if x == 0 {
				continue
			}
			if c == J {
				u[c] = 0
				continue
			}
			x += uint64(int64(int32(ins[c]) - dj))
			u[c] = x
			flags := hostKeyValid | hostKeyFree
			if c >= k {
				flags = batchFlags
			}
			best = max(best, x<<bits|flags|(posMask-uint64(c)))
		}
		v = best
	}
	o := 0
	for c := range n {
		if x := u[c]; x != 0 {
			kept[o] = int32(c)
			scoreOut[o] = 0.5*float64(k) + float64(int64(x-off))*hostQUnit
			o++
		}
	}
}

// duelSelectWideHost is duel_select_wide (the selection on double scores
// and (score, dot sum, position) reductions, for memories too large for
// the packed keys): the b sequential steps on sim (row J of it holds J's
// dots with every position, w apart), from the scores scoreIn of the k
// rows held; it writes evicted (b), kept (k) and the kept rows' scores
// scoreOut (k).
func duelSelectWideHost(sim []float32, w, k, b int, protect bool, scoreIn []float64, evicted, kept []int32, scoreOut []float64) {
	score := make([]float64, k+b)
	flags := make([]uint8, k+b)
	// key is a candidate's position, plus protBit when it is protected;
	// -1 is no candidate.
	const protBit = 1 << 30
	type cand struct {
		score float64
		key   int
	}
	before := func(s float64, key int, v cand) bool {
		switch {
		case key < 0:
			return false
		case v.key < 0:
			return true
		case (key^v.key)&protBit != 0:
			return v.key&protBit != 0
		case s != v.score:
			return s > v.score
		}
		return key < v.key
	}
	v := cand{key: -1}
	for c := range k {
		flags[c] = hostSel
		score[c] = scoreIn[c]
		if before(score[c], c, v) {
			v = cand{score[c], c}
		}
	}
	for i := range b {
		J := v.key &^ protBit
		del, ins := sim[J*w:], sim[(k+i)*w:]
		evicted[i] = int32(J)
		r := cand{key: -1}
		var t int64
		for c := range k + i {
			f := flags[c]
			if f&hostSel == 0 {
				continue
			}
			if c == J {
				flags[c] = 0
				continue
			}
			dI := ins[c]
			s := score[c] - (0.5 + float64(del[c])*hostQUnit)
			s = s + (0.5 + float64(dI)*hostQUnit)
			score[c] = s
			t += int64(dI)
			key := c
			if f&hostProt != 0 {
				key |= protBit
			}
			if before(s, key, r) {
				r = cand{s, key}
			}
		}
		c := k + i
		sNew := (0.5*float64(k-1) + float64(t)*hostQUnit) + (0.5 + float64(ins[c])*hostQUnit)
		score[c] = sNew
		flags[c] = hostSel
		key := c
		if protect {
			flags[c] |= hostProt
			key |= protBit
		}
		v = r
		if before(sNew, key, v) {
			v = cand{sNew, key}
		}
	}
	p := 0
	for c := range k + b {
		if flags[c]&hostSel != 0 {
			kept[p] = int32(c)
			scoreOut[p] = score[c]
			p++
		}
	}
}

// duelHost is one update as Memory runs it, on the host: the grid
// rows of mem and batch, their dots (every pair: the carried block and the
// batch's rows and columns), the scores when opt.Scores is nil, then the
// steps (the packed selection where its keys fit). Arguments are those of
// Update, already validated; batch may be empty (the result then holds
// the scores of mem).
func duelHost(mem, batch []float32, z int, opt Options) Result {
	return duelHostWith(mem, batch, z, opt, false)
}

// duelHostWith is duelHost, with the wide selection (duel_select_wide)
// when wide is set or the packed keys do not fit.
func duelHostWith(mem, batch []float32, z int, opt Options, wide bool) Result {
	k, b := len(mem)/z, len(batch)/z
	w := k + b
	grid := make([]float32, w*z)
	duelGridHost(grid[:k*z], mem)
	duelGridHost(grid[k*z:], batch)
	sim := make([]float32, w*w)
	for r := range w {
		for c := range w {
			var d int32 // exact: every partial sum is below 2^24
			x, y := grid[r*z:(r+1)*z], grid[c*z:(c+1)*z]
			for i := range x {
				d += int32(x[i]) * int32(y[i])
			}
			sim[r*w+c] = float32(d)
		}
	}
	score := opt.Scores
	if score == nil {
		score = make([]float64, k)
		duelScoresHost(score, sim, w, k)
	}
	ev, kept := make([]int32, b), make([]int32, k)
	res := Result{Scores: make([]float64, k)}
	protect := opt.Admission == memory.Protected
	if wide || !packedFits(k, b) {
		duelSelectWideHost(sim, w, k, b, protect, score, ev, kept, res.Scores)
	} else {
		p := make([]int64, b)
		duelBatchSumsHost(p, sim, w, k, b)
		duelSelectHost(sim, w, k, b, protect, score, p, ev, kept, res.Scores)
	}
	res.Evicted, res.Kept = widen(ev), widen(kept)
	return res
}

func widen(v []int32) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
