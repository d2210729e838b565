package eval

import "sort"

// Result is the accuracy of a classifier on a test split.
type Result struct {
	Top1 float64 // fraction of test rows whose best class is the label
	Top5 float64 // fraction whose label is among the 5 best classes; 0 when HasTop5 is false
	// HasTop5 is false with fewer than 6 classes, where top-5 accuracy says
	// nothing (it is 1 with 5 classes or less).
	HasTop5 bool
	Train   int // rows used for training (the probe) or as neighbours (kNN)
	Test    int // rows classified
}

// rankOf returns the rank of class label in scores: the number of classes with
// a higher score, or an equal score and a lower index (ties go to the lower
// class, like a stable argsort).
func rankOf(scores []float64, label int) int {
	s := scores[label]
	r := 0
	for c, v := range scores {
		if v > s || (v == s && c < label) {
			r++
		}
	}
	return r
}

// accuracy accumulates top-1 and top-5 hits. top5Ranks, when set, is how
// many of the best classes count as top-5 predictions: kNN sets min(5, k),
// as solo-learn's WeightedKNNClassifier (with k < 5 neighbours at most k
// classes have a vote; the others are not predictions).
type accuracy struct {
	top1, top5, n int
	top5Ranks     int
}

func (a *accuracy) add(scores []float64, label int) {
	a.n++
	if label < 0 || label >= len(scores) {
		return // a class never seen in training is never predicted
	}
	r := rankOf(scores, label)
	if r == 0 {
		a.top1++
	}
	ranks := 5
	if a.top5Ranks > 0 {
		ranks = a.top5Ranks
	}
	if r < ranks {
		a.top5++
	}
}

func (a *accuracy) result(classes, train int) Result {
	r := Result{Train: train, Test: a.n, HasTop5: classes > 5}
	if a.n > 0 {
		r.Top1 = float64(a.top1) / float64(a.n)
		if r.HasTop5 {
			r.Top5 = float64(a.top5) / float64(a.n)
		}
	}
	return r
}

// argsortDesc returns the class indices by decreasing score, ties by
// increasing index.
func argsortDesc(scores []float64) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	return idx
}
