package eval

// neighbourHeap.topK is the selection knnScores ran on the host before
// tensor.TopK (kept as the tests' and the benchmark's reference): a binary
// heap of the k nearest so far, left in heap order.

// neighbour is a training row and its similarity to the query.
type neighbour struct {
	sim float32
	idx int
}

// farther reports whether a is farther from the query than b: lower
// similarity, or equal similarity and higher index.
func farther(a, b neighbour) bool {
	return a.sim < b.sim || (a.sim == b.sim && a.idx > b.idx)
}

// neighbourHeap is a binary heap with the farthest kept neighbour at the root.
type neighbourHeap []neighbour

// topK leaves in h the k nearest rows of sims (in heap order).
func (h *neighbourHeap) topK(sims []float32, k int) {
	hp := (*h)[:0]
	for i, s := range sims {
		nb := neighbour{s, i}
		if len(hp) < k {
			hp = append(hp, nb)
			// sift up
			c := len(hp) - 1
			for c > 0 {
				p := (c - 1) / 2
				if !farther(hp[c], hp[p]) {
					break
				}
				hp[c], hp[p] = hp[p], hp[c]
				c = p
			}
			continue
		}
		if !farther(hp[0], nb) {
			continue
		}
		hp[0] = nb
		// sift down
		p := 0
		for {
			l := 2*p + 1
			if l >= len(hp) {
				break
			}
			c := l
			if r := l + 1; r < len(hp) && farther(hp[r], hp[l]) {
				c = r
			}
			if !farther(hp[c], hp[p]) {
				break
			}
			hp[c], hp[p] = hp[p], hp[c]
			p = c
		}
	}
	*h = hp
}
