package data

import (
	"fmt"
	"math"
	"sort"

	"github.com/duel-ssl/duel/internal/splitmix"
)

// Profile names a class distribution of the sampler.
type Profile string

// The sampler's class profiles.
const (
	// Dominant is the paper's environment (Section 5): the dominant class has
	// probability RhoMax, every other class (1-RhoMax)/(C-1).
	Dominant Profile = "dominant"
	// LongTail is an exponential profile: the class of rank k (the dominant
	// class has rank 0, then the following class indices in cyclic order) has
	// probability proportional to ImbalanceRatio^(-k/(C-1)), so the head is
	// ImbalanceRatio times as frequent as the tail (as in CIFAR-10-LT).
	LongTail Profile = "longtail"
	// LongTailSubset draws uniformly, with replacement, from a fixed
	// long-tailed subset of the dataset built like CIFAR-10-LT: the class of
	// rank k keeps its first floor(n_max * ImbalanceRatio^(-k/(C-1))) images,
	// n_max being the smallest class size.
	LongTailSubset Profile = "longtail-subset"
	// Uniform gives every class the same probability.
	Uniform Profile = "uniform"
)

// SamplerConfig configures a Sampler.
type SamplerConfig struct {
	Profile        Profile // default Dominant
	RhoMax         float64 // Dominant: probability of the dominant class, in [0, 1]
	DominantClass  int     // the class of highest probability (rank 0)
	ImbalanceRatio float64 // LongTail, LongTailSubset: head/tail ratio, >= 1
	Seed           uint64  // the stream is a pure function of Seed
}

// Sampler draws the class-imbalanced stream in two steps, with replacement:
// a class c ~ rho, then an image uniformly among that class's images. Draw is
// a pure function of (Seed, step, index), so the stream is identical for a
// seed whatever the order or concurrency of the calls, and resuming at a step
// needs no state. Every draw carries the sample id (the image index in the
// dataset) and its label (for metrics only).
type Sampler struct {
	cfg     SamplerConfig
	rho     []float64 // class probabilities
	cum     []float64 // cumulative probabilities, cum[C-1] = 1
	byClass [][]int   // image indices of each class (within the subset for LongTailSubset)
	labels  []int32
}

// checkClasses fills in cfg's default profile and checks the number of
// classes and the dominant class.
func checkClasses(numClasses int, cfg *SamplerConfig) error {
	if cfg.Profile == "" {
		cfg.Profile = Dominant
	}
	if numClasses <= 0 {
		return fmt.Errorf("sampler: %d classes, expected at least 1", numClasses)
	}
	if cfg.DominantClass < 0 || cfg.DominantClass >= numClasses {
		return fmt.Errorf("sampler: dominant class %d, expected 0..%d", cfg.DominantClass, numClasses-1)
	}
	return nil
}

// ClassProbs returns the class probabilities of the stream cfg describes
// over numClasses classes, for the profiles that depend on nothing else:
// dominant, uniform and longtail (a longtail-subset's depend on the class
// sizes: an error). NewSampler draws with these, bit for bit.
func ClassProbs(numClasses int, cfg SamplerConfig) ([]float64, error) {
	if err := checkClasses(numClasses, &cfg); err != nil {
		return nil, err
	}
	rank := func(c int) int { return (c - cfg.DominantClass + numClasses) % numClasses }
	rho := make([]float64, numClasses)
	switch cfg.Profile {
	case Dominant:
		if !(cfg.RhoMax >= 0 && cfg.RhoMax <= 1) {
			return nil, fmt.Errorf("sampler: rho-max %v, expected a probability in [0, 1]", cfg.RhoMax)
		}
		if numClasses == 1 {
			rho[0] = 1
			break
		}
		for c := range rho {
			rho[c] = (1 - cfg.RhoMax) / float64(numClasses-1)
		}
		rho[cfg.DominantClass] = cfg.RhoMax
	case Uniform:
		for c := range rho {
			rho[c] = 1 / float64(numClasses)
		}
	case LongTail:
		if !(cfg.ImbalanceRatio >= 1) || math.IsInf(cfg.ImbalanceRatio, 0) {
			return nil, fmt.Errorf("sampler: imbalance ratio %v, expected a finite number >= 1", cfg.ImbalanceRatio)
		}
		var sum float64
		for c := range rho {
			rho[c] = longTailFactor(rank(c), numClasses, cfg.ImbalanceRatio)
			sum += rho[c]
		}
		for c := range rho {
			rho[c] /= sum
		}
	case LongTailSubset:
		return nil, fmt.Errorf("sampler: the class probabilities of a %s stream depend on the class sizes (NewSampler)", LongTailSubset)
	default:
		return nil, fmt.Errorf("sampler: profile %q, expected dominant, longtail, longtail-subset or uniform", cfg.Profile)
	}
	return rho, nil
}

// NewSampler builds a sampler over a dataset's labels (numClasses classes).
func NewSampler(labels []int32, numClasses int, cfg SamplerConfig) (*Sampler, error) {
	if err := checkClasses(numClasses, &cfg); err != nil {
		return nil, err
	}
	byClass := make([][]int, numClasses)
	for i, l := range labels {
		if l < 0 || int(l) >= numClasses {
			return nil, fmt.Errorf("sampler: label %d of image %d, expected 0..%d", l, i, numClasses-1)
		}
		byClass[l] = append(byClass[l], i)
	}
	var rho []float64
	if cfg.Profile != LongTailSubset {
		var err error
		if rho, err = ClassProbs(numClasses, cfg); err != nil {
			return nil, err
		}
	} else {
		if !(cfg.ImbalanceRatio >= 1) || math.IsInf(cfg.ImbalanceRatio, 0) {
			return nil, fmt.Errorf("sampler: imbalance ratio %v, expected a finite number >= 1", cfg.ImbalanceRatio)
		}
		rank := func(c int) int { return (c - cfg.DominantClass + numClasses) % numClasses }
		rho = make([]float64, numClasses)
		nMax := len(labels)
		for _, idx := range byClass {
			nMax = min(nMax, len(idx))
		}
		if nMax == 0 {
			return nil, fmt.Errorf("sampler: a class has no images, a long-tailed subset needs every class")
		}
		for c, idx := range byClass {
			keep := int(math.Floor(float64(nMax)*longTailFactor(rank(c), numClasses, cfg.ImbalanceRatio) + 1e-9))
			keep = max(keep, 1)
			byClass[c] = idx[:keep]
			rho[c] = float64(keep)
		}
	}
	var sum float64
	for _, p := range rho {
		sum += p
	}
	cum := make([]float64, numClasses)
	acc := 0.0
	for c := range rho {
		if cfg.Profile == LongTailSubset {
			rho[c] /= sum
		}
		if rho[c] > 0 && len(byClass[c]) == 0 {
			return nil, fmt.Errorf("sampler: class %d has probability %.4g but no images", c, rho[c])
		}
		acc += rho[c]
		cum[c] = acc
	}
	// The last class with positive probability closes the distribution.
	for c := numClasses - 1; c >= 0; c-- {
		if rho[c] > 0 {
			for k := c; k < numClasses; k++ {
				cum[k] = 1
			}
			break
		}
	}
	return &Sampler{cfg: cfg, rho: rho, cum: cum, byClass: byClass, labels: labels}, nil
}

// longTailFactor is ratio^(-rank/(C-1)), 1 for a single class.
func longTailFactor(rank, classes int, ratio float64) float64 {
	if classes == 1 {
		return 1
	}
	return math.Pow(ratio, -float64(rank)/float64(classes-1))
}

// Config returns the configuration with defaults filled in.
func (s *Sampler) Config() SamplerConfig { return s.cfg }

// Probs returns the class probabilities rho (a copy).
func (s *Sampler) Probs() []float64 { return append([]float64(nil), s.rho...) }

// Pool returns the image indices the sampler draws from for each class: all
// of the class for the stream profiles, the fixed subset for LongTailSubset.
func (s *Sampler) Pool() [][]int { return s.byClass }

// Draw returns draw number index of step: the sample id (an image index) and
// its label.
func (s *Sampler) Draw(step int64, index int) (id int64, label int32) {
	r := splitmix.New(splitmix.Derive(s.cfg.Seed, 0x5a4d, uint64(step), uint64(index)))
	u := r.Float64()
	c := sort.SearchFloat64s(s.cum, u)
	if u == s.cum[c] { // SearchFloat64s finds the first cum >= u; we need cum > u
		c++
	}
	for c < len(s.cum)-1 && s.rho[c] == 0 {
		c++
	}
	pool := s.byClass[c]
	i := pool[r.Intn(len(pool))]
	return int64(i), s.labels[i]
}

// Batch fills ids and labels (of equal length) with the draws of step.
func (s *Sampler) Batch(step int64, ids []int64, labels []int32) {
	for i := range ids {
		ids[i], labels[i] = s.Draw(step, i)
	}
}
