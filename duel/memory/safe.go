package memory

import "math"

// SafeCheck estimates the distinctiveness information of a memory before and
// after an update, as Algorithm 2 (Appendix C) compares them to decide
// whether to accept it:
//
//	I_d(M) = mean over the incoming rows x of -log(mean over y in M of q(x,y))
//
// The expectation over the data distribution D_t is estimated on the
// incoming batch, the only unbiased sample of D_t at hand (the memory is
// not one, by design); the estimate needs batches that represent the
// stream, as training batches of a few hundred rows do. rows are the K rows held,
// batch the B incoming rows (both L2-normalised, z values each) and keep
// the positions (rows held, then batch rows) of the memory after the
// update. The update is safe when after >= before.
//
// This is the definition as written (Appendix A: I_d(f; D', M) =
// E_{x~D'}[I_d(x; f, M)], I_d(x; f, M) = -log E_{y~M}[q(x,y)]), and it
// rejects many DUEL updates on a stream with a dominant class. That is the
// criterion, not the estimator: weighted by D_t, information is highest
// when the frequent classes are under-represented (x rows under a 3:1 x:y
// stream: memory x1 y3 beats x2 y2, which beats x3 y1; see
// TestSafeCheckValues), while DUEL evens the classes out, so every batch
// that leaves the dominant class one row up is rejected. The safeness
// proposition of Appendix A does not say otherwise once its sign is
// fixed: replacing a row of the largest class c_max by one of class c_new
// changes I_d by rho_max*log(N_max/(N_max-1)) -
// rho_new*log((N_new+1)/N_new) (the paper adds the second term), which is
// positive only while rho_max/N_max exceeds rho_new/N_new, about.
//
// The batch rows are both the sample of D_t and, once entered, rows of the
// memory after the update, so each counts its own q(x,x) = 1. With ideal
// features (identical rows within a class, the setting of the safeness
// definition) that equals the q of a fresh sample of its class and the
// estimate is exact; with noisy features it is a small bias against the
// update. Leaving the row out instead (mean over the K-1 others) biases
// the other way (an update that replaces a row by an identical one would
// gain information), so the definition is kept as written; bench/RESULTS.md
// (## DUEL memory) measures both.
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
