package eval

import (
	"fmt"
	"math"
	"runtime"

	"github.com/duel-ssl/duel/internal/par"
	"github.com/duel-ssl/duel/kernels/topk"
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
	// Device computes the similarities and selects each test row's k
	// neighbours (zero: the CPU); only the neighbours' similarities and
	// indices come back to the host (see neighbours).
	Device tensor.Device
}

// DefaultKNNConfig returns k = 200, T = 0.07, weighted vote: InstDisc's k
// and temperature. solo-learn's WeightedKNNClassifier defaults to k = 20
// (T = 0.07), and its offline kNN sweeps k and T.
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
// The similarities are one SGEMM per chunk of test rows, on cfg.Device, and
// the k nearest training rows of each test row are selected there too
// (tensor.TopK). Of equal similarities, the training row of lower index is
// the nearer; the neighbours' votes are summed nearest first, so the class
// scores are the same bits on every device; of equal class scores, the
// lower class wins.
func KNN(train, test *Features, cfg KNNConfig) (Result, error) {
	classes, err := knnCheck(train, test, &cfg)
	if err != nil {
		return Result{}, err
	}
	acc := accuracy{top5Ranks: min(5, cfg.K)} // knnCheck capped K at the training rows
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

// maxExpArg bounds the exponents of the kNN's vote weights: exp(600) is
// about 4e260, so that the sum of any number of them stays far below
// float64's maximum, 1.8e308.
const maxExpArg = 600

// knnScores calls emit(i, scores) for every test row i with the class scores
// of its neighbours' votes (scores is reused after emit returns). emit is
// called from one goroutine at a time.
func knnScores(train, test *Features, cfg KNNConfig, classes int, emit func(i int, scores []float64)) error {
	tr := train.Normalized()
	k := cfg.K
	selFn, err := neighbours(tr, cfg.Device, k)
	if err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	q := make([]float32, knnChunk*tr.D)
	vals, idx := make([]float32, knnChunk*k), make([]int32, knnChunk*k)
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
		if err := selFn(vals[:m*k], idx[:m*k], q, m); err != nil {
			return err
		}
		par.For(m, workers, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				sc := scores[r]
				clear(sc)
				// The weights are solo-learn's exp(s/T), unless the nearest's
				// would come near overflow (s/T > 600, T below 0.0017; past
				// 709, exp overflows to +Inf, where every
				// voted class would score +Inf and tie): then they are taken
				// relative to the nearest's, exp((s - s_max)/T), the same
				// votes up to a common factor, so the same ranking.
				shift := 0.0
				if top := float64(vals[r*k]); top*invT > maxExpArg {
					shift = top
				}
				for j := r * k; j < (r+1)*k; j++ { // nearest first
					w := 1.0
					if cfg.Vote == Weighted {
						w = math.Exp((float64(vals[j]) - shift) * invT)
					}
					sc[tr.Labels[idx[j]]] += w
				}
			}
		})
		for r := 0; r < m; r++ {
			emit(start+r, scores[r])
		}
		if cfg.Progress != nil {
			cfg.Progress(start + m)
		}
	}
	return nil
}

// neighbours returns a function that writes into vals and idx (m rows of
// k, row-major) the similarities and indices of the k nearest training
// rows of each of the m rows of q (m x tr.D), nearest first in
// kernels/topk's order (larger similarity first, of equal ones the lower
// index; a NaN similarity last). On the CPU the similarities are one Gemm
// on the host slices (similarities) and kernels/topk.Rows selects from
// them, rows in parallel. On another device the training rows are copied
// there once, each chunk's similarities are a MatMul there and tensor.TopK
// selects there (the backend's TopKBackend: only m·k values and indices
// come back; a backend without it copies the m x tr.N block out and
// selects on the host, with the same results).
func neighbours(tr *Features, dev tensor.Device, k int) (func(vals []float32, idx []int32, q []float32, m int) error, error) {
	if dev == "" || dev == tensor.CPU {
		simFn, err := similarities(tr)
		if err != nil {
			return nil, err
		}
		sims := make([]float32, knnChunk*tr.N)
		return func(vals []float32, idx []int32, q []float32, m int) error {
			if err := simFn(sims, q, m); err != nil {
				return err
			}
			topk.Rows(m, tr.N, k, sims[:m*tr.N], vals, idx)
			return nil
		}, nil
	}
	bank, err := tensor.FromSlice(tr.X, tr.N, tr.D).To(dev)
	if err != nil {
		return nil, fmt.Errorf("kNN: copying %d training rows to %s: %w", tr.N, dev, err)
	}
	bankT := bank.T()
	return func(vals []float32, idx []int32, q []float32, m int) error {
		qd, err := tensor.FromSlice(q[:m*tr.D], m, tr.D).To(dev)
		if err != nil {
			return fmt.Errorf("kNN: copying %d test rows to %s: %w", m, dev, err)
		}
		defer qd.Release()
		var s *tensor.Tensor
		if err := tensor.CatchDeviceError(func() { s = tensor.MatMul(qd, bankT) }); err != nil {
			return fmt.Errorf("kNN: similarities on %s: %w", dev, err)
		}
		defer s.Release()
		v, ix, err := tensor.TopK(s, k)
		if err != nil {
			return fmt.Errorf("kNN: selecting %d neighbours on %s: %w", k, dev, err)
		}
		copy(vals, v)
		copy(idx, ix)
		return nil
	}, nil
}
