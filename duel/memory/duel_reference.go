package memory

// duelReference is the paper's update_DUEL (Appendix D, PyTorch-style
// pseudocode) transcribed line by line, for a full memory, in the reading
// adm (see Admission). It builds the whole (K+B) x (K+B) score matrix, so it
// costs O(Z (K+B)^2) per update; it is the reference the fast path is tested
// against, and the implementation of the readings the fast path lacks. It
// returns the evicted positions (see Policy).
//
// Three details are made explicit here. The argmax runs over the selected
// rows only (the pseudocode relies on unselected rows having score 0). A
// new row's own score includes its q with itself, like the initial scores
// of the rows held (the pseudocode's t.sum() leaves it out, which would
// favour new rows by about 1 in Compete mode); in MaxScore the pseudocode's
// t.sum() + MAX_SCORE is kept as printed. MAX_SCORE is the reading: a rank
// below the rows held (Protected), 0 (Compete) or maxScoreOffset (MaxScore);
// InsertFirst moves the insertion before the selection (Algorithm 1).
func duelReference(a *Arrival, adm Admission) []int { return duelReferenceSteps(a, adm, nil) }

// duelReferenceSteps is duelReference calling observe, when it is not nil,
// before each step's selection with the scores, the rows selected and the
// rows protected at that moment (BenchmarkVictimRank reads them).
func duelReferenceSteps(a *Arrival, adm Admission, observe func(score []float64, selected, protected []bool)) []int {
	z, k := a.Z, a.K()
	n := k + a.B()

	// comb = torch.cat((memory, p_target), dim=0)
	// score_matrix = score_function(torch.mm(comb, comb.transpose(0,1)))
	q := combinedQ(a.Memory, a.Batch, z)

	// selection = [i < K]; score = cat(score_memory.sum(-1), zeros(B))
	selected := make([]bool, n)
	protected := make([]bool, n)
	score := make([]float64, n)
	for i := 0; i < k; i++ {
		selected[i] = true
		for j := 0; j < k; j++ {
			score[i] += q(i, j)
		}
	}

	// (a) Select target: J = argmax(score) over the rows selected.
	argmax := func() int {
		J := -1
		for c := 0; c < n; c++ {
			if selected[c] && (J < 0 || evictsBefore(protected[c], score[c], c, protected[J], score[J], J)) {
				J = c
			}
		}
		return J
	}
	// (b) Logical deletion: score -= score_matrix[J] * selection
	remove := func(J int) {
		for c := 0; c < n; c++ {
			if selected[c] {
				score[c] -= q(J, c)
			}
		}
		selected[J] = false
	}
	// (c) Logical insertion: t = score_matrix[i] * selection; score += t
	insert := func(i int) float64 {
		var t float64
		for c := 0; c < n; c++ {
			if selected[c] {
				score[c] += q(i, c)
				t += q(i, c)
			}
		}
		selected[i] = true
		return t
	}

	evicted := make([]int, 0, a.B())
	for i := k; i < n; i++ {
		if adm == InsertFirst {
			// Algorithm 1: M <- M u {x}; J <- argmin I_d over the K+1; M <- M \ {x_J}
			score[i] = insert(i) + q(i, i)
			if observe != nil {
				observe(score, selected, protected)
			}
			J := argmax()
			evicted = append(evicted, J)
			remove(J)
			continue
		}
		if observe != nil {
			observe(score, selected, protected)
		}
		J := argmax()
		evicted = append(evicted, J)
		remove(J)
		t := insert(i)
		switch adm {
		case MaxScore:
			score[i] = t + maxScoreOffset // score[i] = t.sum() + MAX_SCORE
		default:
			score[i] = t + q(i, i)
			protected[i] = adm == Protected
		}
	}
	return evicted
}

// combinedQ returns q(i, j) over the rows of memory then batch (z values
// each, on the similarity grid): the pseudocode's score_matrix, its (K+B)²
// dots computed once.
func combinedQ(memory, batch []float32, z int) func(i, j int) float64 {
	k, n := len(memory)/z, (len(memory)+len(batch))/z
	comb := make([]float32, n*z)
	toGrid(comb[:k*z], memory)
	toGrid(comb[k*z:], batch)
	dots := make([]float32, n*n)
	gridDots(dots, comb, comb, n, n, z)
	return func(i, j int) float64 { return qOf(dots[i*n+j]) }
}
