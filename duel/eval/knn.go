package eval

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/duel-ssl/duel/tensor"
)

// Vote says how the k nearest neighbours of a test row vote for its class.
type Vote int

const (
	// Weighted gives each neighbour the weight exp(s/T), s its cosine
	// similarity to the test row and T the temperature: the kNN monitor of
	// InstDisc (Wu et al., 2018, Eq. 7) as implemented by solo-learn's
	// WeightedKNNClassifier (distance_fx "cosine").
	Weighted Vote = iota
	// Majority gives each neighbour one vote.
	Majority
)

// String returns "weighted" or "majority".
func (v Vote) String() string {
	switch v {
	case Weighted:
		return "weighted"
	case Majority:
		return "majority"
	}
	return fmt.Sprintf("Vote(%d)", int(v))
}

// ParseVote parses "weighted" or "majority".
func ParseVote(s string) (Vote, error) {
	switch s {
	case "weighted":
		return Weighted, nil
	case "majority":
		return Majority, nil
	}
	return 0, fmt.Errorf("vote %q, expected weighted or majority", s)
}

// KNNConfig holds the settings of the kNN classifier.
type KNNConfig struct {
	K           int     // neighbours (200); more than the training rows means all of them
	Temperature float64 // T of the weighted vote (0.07)
	Vote        Vote    // Weighted (default) or Majority
	// Classes is the number of classes; 0 takes 1 + the largest label seen.
	Classes int
	// Progress, when set, is called with the number of test rows done.
	Progress func(done int)
	// Device computes the similarities (zero: the CPU); the neighbours
	// are selected on the host (see similarities).
	Device tensor.Device
}

// DefaultKNNConfig returns k = 200, T = 0.07, weighted vote (solo-learn's
// defaults).
func DefaultKNNConfig() KNNConfig {
	return KNNConfig{K: 200, Temperature: 0.07, Vote: Weighted}
}

// knnChunk is the number of test rows whose similarities to every training row
// are computed by one SGEMM.
const knnChunk = 256

// KNN classifies every row of test by its cosine-similarity nearest
// neighbours among the rows of train (both L2-normalised first) and returns
// the accuracy.
//
// The similarities are one SGEMM per chunk of test rows, on cfg.Device. Of equal
// similarities, the training row of lower index is the nearer; of equal class
// scores, the lower class wins.
func KNN(train, test *Features, cfg KNNConfig) (Result, error) {
	classes, err := knnCheck(train, test, &cfg)
	if err != nil {
		return Result{}, err
	}
	var acc accuracy
	err = knnScores(train, test, cfg, classes, func(i int, scores []float64) {
		acc.add(scores, int(test.Labels[i]))
	})
	if err != nil {
		return Result{}, err
	}
	return acc.result(classes, train.N), nil
}

// KNNPredict returns the predicted class of every row of test (see KNN).
func KNNPredict(train, test *Features, cfg KNNConfig) ([]int, error) {
	classes, err := knnCheck(train, test, &cfg)
	if err != nil {
		return nil, err
	}
	pred := make([]int, test.N)
	err = knnScores(train, test, cfg, classes, func(i int, scores []float64) {
		pred[i] = argsortDesc(scores)[0]
	})
	return pred, err
}

func knnCheck(train, test *Features, cfg *KNNConfig) (int, error) {
	if train.N == 0 {
		return 0, fmt.Errorf("kNN: no training rows")
	}
	if train.D != test.D {
		return 0, fmt.Errorf("kNN: training features have dimension %d, test features %d", train.D, test.D)
	}
	if cfg.K <= 0 {
		return 0, fmt.Errorf("kNN: k = %d, expected > 0", cfg.K)
	}
	if cfg.Vote == Weighted && !(cfg.Temperature > 0) {
		return 0, fmt.Errorf("kNN: temperature %v, expected > 0", cfg.Temperature)
	}
	if cfg.Vote != Weighted && cfg.Vote != Majority {
		return 0, fmt.Errorf("kNN: unknown vote %v", cfg.Vote)
	}
	classes := cfg.Classes
	if classes == 0 {
		classes = max(train.NumClasses(), test.NumClasses())
	}
	if n := train.NumClasses(); n > classes {
		return 0, fmt.Errorf("kNN: training label %d, expected < %d classes", n-1, classes)
	}
	cfg.K = min(cfg.K, train.N)
	return classes, nil
}

// knnScores calls emit(i, scores) for every test row i with the class scores
// of its neighbours' votes (scores is reused after emit returns). emit is
// called from one goroutine at a time.
func knnScores(train, test *Features, cfg KNNConfig, classes int, emit func(i int, scores []float64)) error {
	tr := train.Normalized()
	simFn, err := similarities(tr, cfg.Device)
	if err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	sims := make([]float32, knnChunk*tr.N)
	q := make([]float32, knnChunk*tr.D)
	type scratch struct {
		heap   neighbourHeap
		scores []float64
	}
	work := make([]scratch, workers)
	for w := range work {
		work[w] = scratch{heap: make(neighbourHeap, 0, cfg.K), scores: make([]float64, classes)}
	}
	scores := make([][]float64, knnChunk)
	for r := range scores {
		scores[r] = make([]float64, classes)
	}
	invT := 1 / cfg.Temperature
	for start := 0; start < test.N; start += knnChunk {
		m := min(knnChunk, test.N-start)
		for r := 0; r < m; r++ {
			NormalizeInto(q[r*tr.D:(r+1)*tr.D], test.Row(start+r))
		}
		if err := simFn(sims, q, m); err != nil {
			return err
		}
		var wg sync.WaitGroup
		per := (m + workers - 1) / workers
		for w := 0; w < workers; w++ {
			lo, hi := w*per, min((w+1)*per, m)
			if lo >= hi {
				break
			}
			wg.Add(1)
			go func(s *scratch) {
				defer wg.Done()
				for r := lo; r < hi; r++ {
					row := sims[r*tr.N : (r+1)*tr.N]
					s.heap.topK(row, cfg.K)
					sc := scores[r]
					clear(sc)
					for _, nb := range s.heap {
						w := 1.0
						if cfg.Vote == Weighted {
							w = math.Exp(float64(nb.sim) * invT)
						}
						sc[tr.Labels[nb.idx]] += w
					}
				}
			}(&work[w])
		}
		wg.Wait()
		for r := 0; r < m; r++ {
			emit(start+r, scores[r])
		}
		if cfg.Progress != nil {
			cfg.Progress(start + m)
		}
	}
	return nil
}

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
