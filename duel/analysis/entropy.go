package analysis

import (
	"fmt"
	"math"
)

// ClassCounts counts the labels of each class in [0, classes). A label
// outside that range is an error naming it.
func ClassCounts(labels []int32, classes int) ([]int, error) {
	counts := make([]int, classes)
	for i, l := range labels {
		if l < 0 || int(l) >= classes {
			return nil, fmt.Errorf("label %d of row %d, expected a class in [0, %d)", l, i, classes)
		}
		counts[l]++
	}
	return counts, nil
}

// ClassEntropy returns the entropy in nats of the class distribution given by
// counts, H = -Σ_c p_c ln p_c with p_c = n_c / Σ n: the "Class Entropy" of the
// memory in the paper's Table 2 (ln 10 ≈ 2.3026 for a uniform memory over the
// 10 CIFAR-10 classes; 0 for one class or an empty memory).
func ClassEntropy(counts []int) float64 {
	total := 0
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return 0
	}
	var h float64
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(total)
			h -= p * math.Log(p)
		}
	}
	return h
}

// Entropy returns the entropy in nats of the probabilities p (which sum to
// 1), H = -Σ p ln p over the positive ones: a stream's class entropy, the
// reference for a memory's (ClassEntropy).
func Entropy(p []float64) float64 {
	var h float64
	for _, q := range p {
		if q > 0 {
			h -= q * math.Log(q)
		}
	}
	return h
}
