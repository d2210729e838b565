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

// duelSelectHost is duel_select_shared and duel_select_global: the b
// sequential steps on sim (row J of it holds J's dots with every
// position, w apart), from the scores scoreIn of the k rows held; it
// writes evicted (b), kept (k) and the kept rows' scores scoreOut (k).
func duelSelectHost(sim []float32, w, k, b int, protect bool, scoreIn []float64, evicted, kept []int32, scoreOut []float64) {
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
// steps. Arguments are those of Update, already validated; batch may
// be empty (the result then holds the scores of mem).
func duelHost(mem, batch []float32, z int, opt Options) Result {
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
	duelSelectHost(sim, w, k, b, opt.Admission == memory.Protected, score, ev, kept, res.Scores)
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
