package memory

import "math"

// SafeCheck estimates the distinctiveness information of a memory before and
// after an update, as Algorithm 2 (Appendix C) compares them to decide
// whether to accept it:
//
//	I_d(M) = mean over the incoming rows x of -log(mean over y in M of q(x,y))
//
// the expectation over D_t being estimated on the incoming batch. rows are
// the K rows held, batch the B incoming rows (both L2-normalised, z values
// each) and keep the positions (rows held, then batch rows) of the memory
// after the update, which is safe when after >= before. On a stream with a
// dominant class it rejects most DUEL updates: weighted by D_t, information
// is highest when the dominant class is under-represented relative to its
// frequency (rho_max/N_max > rho_new/N_new), which DUEL's evening-out
// crosses. docs/duel-readings.md derives this and discusses the estimator.
func SafeCheck(rows, batch []float32, z int, keep []int) (before, after float64) {
	k, b := len(rows)/z, len(batch)/z
	w := k + b
	grid := make([]float32, w*z)
	toGrid(grid[:k*z], rows)
	toGrid(grid[k*z:], batch)
	dots := make([]float32, b*w)
	gridDots(dots, grid[k*z:], grid, b, w, z)
	for i := 0; i < b; i++ {
		row := dots[i*w : (i+1)*w]
		var old, upd float64
		for p := 0; p < k; p++ {
			old += qOf(row[p])
		}
		for _, p := range keep {
			upd += qOf(row[p])
		}
		before += info(old / float64(k))
		after += info(upd / float64(len(keep)))
	}
	return before / float64(b), after / float64(b)
}

// info returns -log(meanQ), the distinctiveness information of a row whose
// mean q with a memory is meanQ. meanQ is clamped to 1e-12: rounding on the
// similarity grid can make a q of an opposite row a tiny negative number.
func info(meanQ float64) float64 {
	return -math.Log(max(meanQ, 1e-12))
}
