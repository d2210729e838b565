package cuda

import (
	"math"

	"github.com/duel-ssl/duel/duel/memory"
)

// duelHost is duel_update (kernels/cuda/duel.cu) transcribed to Go phase by
// phase, one loop per kernel loop, on the same integer grid and with the
// same double arithmetic. The tests run it everywhere against memory.DUEL,
// which checks the algorithm the kernel implements on machines without a
// GPU; on a GPU they check the kernel against both. Arguments are those of
// DUELUpdate, already validated.
func duelHost(mem, batch []float32, z int, opt DUELOptions) DUELResult {
	const (
		sel   = 1
		prot  = 2
		qUnit = 0x1p-23
	)
	k, b := len(mem)/z, len(batch)/z
	w := k + b
	grid := make([]int32, w*z)
	for e := range grid {
		var x float32
		if e < k*z {
			x = mem[e]
		} else {
			x = batch[e-k*z]
		}
		grid[e] = int32(math.Floor(float64(x)*2048 + 0.5))
	}
	dot := func(r, c int) int32 {
		var d int32
		x, y := grid[r*z:(r+1)*z], grid[c*z:(c+1)*z]
		for i := range x {
			d += x[i] * y[i]
		}
		return d
	}
	flags := make([]uint8, w)
	for c := range k {
		flags[c] = sel
	}
	dots := make([]int32, b*w)
	for e := range dots {
		dots[e] = dot(k+e/w, e%w)
	}
	score := make([]float64, w)
	if opt.Scores != nil {
		copy(score, opt.Scores)
	} else {
		for j := range k {
			var s int64
			for c := range k {
				s += int64(dot(j, c))
			}
			score[j] = 0.5*float64(k) + float64(s)*qUnit
		}
	}
	// before is the kernel's victim order (memory's evictsBefore).
	before := func(a, bb int) bool {
		if a < 0 {
			return false
		}
		if bb < 0 {
			return true
		}
		pa, pb := flags[a]&prot != 0, flags[bb]&prot != 0
		if pa != pb {
			return pb
		}
		if score[a] != score[bb] {
			return score[a] > score[bb]
		}
		return a < bb
	}
	J := -1
	for c := range k {
		if before(c, J) {
			J = c
		}
	}
	res := DUELResult{Evicted: make([]int, b)}
	protect := opt.Admission == memory.Protected
	for i := range b {
		res.Evicted[i] = J
		ins := dots[i*w : (i+1)*w]
		var t, held int64
		for c := range w {
			if flags[c]&sel == 0 {
				continue
			}
			if c == J {
				flags[c] = 0
				continue
			}
			var dJ int32
			switch {
			case c >= k:
				dJ = dots[(c-k)*w+J]
			case J >= k:
				dJ = dots[(J-k)*w+c]
			default:
				dJ = dot(J, c)
			}
			s := score[c] - (0.5 + float64(dJ)*qUnit)
			score[c] = s + (0.5 + float64(ins[c])*qUnit)
			t += int64(ins[c])
			held++
		}
		c := k + i
		score[c] = (0.5*float64(held) + float64(t)*qUnit) + (0.5 + float64(ins[c])*qUnit)
		flags[c] = sel
		if protect {
			flags[c] |= prot
		}
		J = -1
		if i+1 < b {
			for c := range k + i + 1 {
				if flags[c]&sel != 0 && before(c, J) {
					J = c
				}
			}
		}
	}
	for c := range w {
		if flags[c]&sel != 0 {
			res.Kept = append(res.Kept, c)
			res.Scores = append(res.Scores, score[c])
		}
	}
	return res
}
