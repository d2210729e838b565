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

const hostQUnit = 0x1p-23

// duelGridHost is duel_grid: g[e] = floor(2048*x[e] + 1/2).
func duelGridHost(g, x []float32) {
	for e, v := range x {
		g[e] = float32(math.Floor(float64(v)*2048 + 0.5))
	}
}

// duelScoresHost is duel_scores: score[j] = K/2 + 2^-23 * sum_{c<K}
// sim[j*w + c].
func duelScoresHost(score []float64, sim []int32, w, k int) {
	for j := range k {
		var s int64
		for _, d := range sim[j*w : j*w+k] {
			s += int64(d)
		}
		score[j] = 0.5*float64(k) + float64(s)*hostQUnit
	}
}

// gridDot is the dot of two grid rows, exact: every partial sum is an
// integer below 2^24.
func gridDot(x, y []float32) int32 {
	var d int32
	for i := range x {
		d += int32(x[i]) * int32(y[i])
	}
	return d
}

// duelIntBlockHost is duel_int_block: the rows x cols block at p (w
// apart) of float32 bits (sgemm_f32's dots) made int32 in place.
func duelIntBlockHost(p []int32, w, rows, cols int) {
	for r := range rows {
		for c := range cols {
			p[r*w+c] = int32(math.Float32frombits(uint32(p[r*w+c])))
		}
	}
}

// duelDotsHost is duel_dots: sim[(k+i)*w + c] = sim[c*w + k+i] (c < k) =
// grid(k+i).grid(c) for i < b, c < k+b, and p[i] += the sum of the row's
// dots with the slots before it (c < k+i).
func duelDotsHost(grid []float32, z, k, b int, sim []int32, w int, p []int64) {
	for i := range b {
		x := grid[(k+i)*z : (k+i+1)*z]
		for c := range k + b {
			d := gridDot(x, grid[c*z:(c+1)*z])
			sim[(k+i)*w+c] = d
			if c < k {
				sim[c*w+k+i] = d
			}
			if c < k+i {
				p[i] += int64(d)
			}
		}
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
// packed selection, on slots): the b sequential steps on sim (row J of it
// holds slot J's dots with every slot, w apart), from the scores scoreIn
// of the k slots held and the batch sums p (duel_batch_sums); kept is
// duel.cu's slot state (rank[k], slot[k], src[k], moves[b]): it reads the
// rank and slot tables and writes the next ones, src and moves; evicted
// gets the victims' positions (b), scoreOut the scores by slot (k). The
// kernel's threads split the slots and reduce their maxima; here one loop
// visits them in order and keeps the maximum (a maximum does not depend
// on the order), and the compactions run in order.
func duelSelectHost(sim []int32, w, k, b int, protect bool, scoreIn []float64, p []int64, evicted, kept []int32, scoreOut []float64) {
	rank, slot, src, moves := kept[:k], kept[k:2*k], kept[2*k:3*k], kept[3*k:3*k+b]
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
			uc := off + uint64(int64((scoreIn[c]-0.5*float64(k))*0x1p23))
			x = uc<<bits | hostKeyValid | hostKeyFree | (posMask - uint64(rank[c]))
			best = max(best, x)
		} else {
			x = (off+uint64(p[c-k]))<<bits | batchFlags | (posMask - uint64(c))
		}
		u[c] = x
	}
	v := best
	for i := range b {
		r := int(posMask - v&posMask)
		J := r
		if r < k {
			J = int(slot[r])
		}
		top := k + i
		del, ins := sim[J*w:], sim[top*w:]
		evicted[i] = int32(r)
		best = 0
		for c := range n {
			x := u[c]
			dj := del[c]
			if c > top {
				u[c] = x - uint64(int64(dj))<<bits
				continue
			}
			if x == 0 {
				continue
			}
			if c == J {
				u[c] = 0
				continue
			}
			x += uint64(int64(ins[c]-dj)) << bits
			u[c] = x
			best = max(best, x)
		}
		v = best
	}
	scoreOf := func(x uint64) float64 {
		return 0.5*float64(k) + float64(int64((x<<2)>>(2+bits)-off))*hostQUnit
	}
	m := 0
	for c := k; c < n; c++ {
		if u[c] != 0 {
			moves[m] = int32(c)
			m++
		}
	}
	j := 0
	for t := range k {
		from := t
		if u[t] == 0 {
			from = int(moves[j])
			moves[j] = int32(t)
			j++
		}
		src[t] = int32(from)
		scoreOut[t] = scoreOf(u[from])
	}
	o := 0
	for q := range k {
		s := slot[q]
		if u[s] != 0 {
			slot[o], rank[s] = s, int32(o)
			o++
		}
	}
	for j := range b {
		if j < m {
			s := moves[j]
			slot[k-m+j], rank[s] = s, int32(k-m+j)
		} else {
			moves[j] = -1
		}
	}
}

// duelMoveHost is duel_move: the slots moves[j] >= 0 (kept's moves) take
// the sim rows, sim columns and grid rows of their batch slots src[slot].
func duelMoveHost(sim []int32, w int, grid []float32, z, k, b int, kept []int32) {
	src, moves := kept[2*k:3*k], kept[3*k:3*k+b]
	for _, s := range moves {
		if s < 0 {
			break
		}
		from := int(src[s])
		for t := range k {
			st := int(src[t])
			v := sim[from*w+st]
			sim[int(s)*w+t] = v
			if st == t { // sim[t][from] = sim[from][t]: sim is exactly symmetric
				sim[t*w+int(s)] = v
			}
		}
		copy(grid[int(s)*z:(int(s)+1)*z], grid[from*z:(from+1)*z])
	}
}

// duelGatherHost is duel_gather: out's K x K block takes sim's row
// src[s] at columns src[t] (kept's src), and the grid rows of the slots
// that move take their batch slots' rows.
func duelGatherHost(sim, out []int32, w int, grid []float32, z, k int, kept []int32) {
	src := kept[2*k : 3*k]
	for s := range k {
		from := int(src[s])
		row, to := sim[from*w:], out[s*w:s*w+k]
		for t := range to {
			to[t] = row[src[t]]
		}
		if from != s {
			copy(grid[s*z:(s+1)*z], grid[from*z:(from+1)*z])
		}
	}
}

// duelHost is one update as Memory runs it, on the host, from the
// memory in position order (slot p holding position p): the grid rows of
// mem and batch, their dots (every pair: the carried block and the
// batch's rows and columns, with the batch sums), the scores when
// opt.Scores is nil, then the steps; Kept from the evictions (as Memory.Update), the
// scores by slot put in position order (as Memory.Scores). Arguments are
// those of Update, already validated; batch may be empty (the result then
// holds the scores of mem).
func duelHost(mem, batch []float32, z int, opt Options) Result {
	k, b := len(mem)/z, len(batch)/z
	w := k + b
	grid := make([]float32, w*z)
	duelGridHost(grid[:k*z], mem)
	duelGridHost(grid[k*z:], batch)
	sim := make([]int32, w*w)
	for r := range k { // the K x K block, as Load's product; the batch's rows and columns below
		for c := range k {
			sim[r*w+c] = gridDot(grid[r*z:(r+1)*z], grid[c*z:(c+1)*z])
		}
	}
	p := make([]int64, b)
	duelDotsHost(grid, z, k, b, sim, w, p)
	score := opt.Scores
	if score == nil {
		score = make([]float64, k)
		duelScoresHost(score, sim, w, k)
	}
	ev, kept := make([]int32, b), make([]int32, 3*k+b)
	for p := range k {
		kept[p], kept[k+p] = int32(p), int32(p)
	}
	bySlot := make([]float64, k)
	duelSelectHost(sim, w, k, b, opt.Admission == memory.Protected, score, p, ev, kept, bySlot)
	res := Result{Evicted: widen(ev), Kept: make([]int, k), Scores: make([]float64, k)}
	keptPositions(res.Kept, res.Evicted)
	for q, s := range kept[k : 2*k] {
		res.Scores[q] = bySlot[s]
	}
	return res
}

func widen(v []int32) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
