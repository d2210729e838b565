package analysis

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/duel/eval"
)

// ClusterStats are the paper's measures of how the representations of each
// class cluster on the unit hypersphere (Section 5, "Analysis of the
// robustness of representation", Equations v-intra and d-inter; Table 2 and
// the class-wise metrics of Appendix F.2, Fig. F.2b-c).
//
// With f(x) the L2-normalised feature of x and the class centroid on the
// hypersphere
//
//	r̄_c = E_{x∼D_c}[f(x)] / ‖E_{x∼D_c}[f(x)]‖₂,
//
// the intra-class variance of class c is E_{x∼D_c}[(r̄_cᵀ f(x) − 1)²] and its
// inter-class similarity is the mean of r̄_cᵀ r̄_c' over the other classes c';
// the overall values are their means over the classes:
//
//	v̄_intra = 1/|C| Σ_c E_{x∼D_c}[(r̄_cᵀ f(x) − 1)²]
//	s̄_inter = 1/(|C|(|C|−1)) Σ_c Σ_{c'≠c} r̄_cᵀ r̄_c'
//
// Lower is better for both. C is the set of classes with at least one row;
// expectations are means over the rows of the class. Sums are in float64.
type ClusterStats struct {
	Classes         []int     // the classes present, increasing
	Counts          []int     // rows of each of Classes
	IntraVariance   []float64 // per class of Classes
	InterSimilarity []float64 // per class of Classes: mean r̄_cᵀ r̄_c' over c' ≠ c
	// MeanIntraVariance is v̄_intra, MeanInterSimilarity is s̄_inter.
	MeanIntraVariance, MeanInterSimilarity float64
}

// Cluster computes ClusterStats of the rows of f, each L2-normalised first
// (x / max(‖x‖, 1e-12), as torch.nn.functional.normalize). It needs at least
// two classes, without which the inter-class similarity is undefined.
func Cluster(f *eval.Features) (*ClusterStats, error) {
	classes := f.NumClasses()
	sums := make([][]float64, classes)
	counts := make([]int, classes)
	unit := make([]float32, f.D)
	for i := 0; i < f.N; i++ {
		c := f.Labels[i]
		if c < 0 {
			return nil, fmt.Errorf("cluster statistics: label %d of row %d, expected >= 0", c, i)
		}
		if sums[c] == nil {
			sums[c] = make([]float64, f.D)
		}
		eval.NormalizeInto(unit, f.Row(i))
		for j, v := range unit {
			sums[c][j] += float64(v)
		}
		counts[c]++
	}
	s := &ClusterStats{}
	var centroids [][]float64
	for c := range counts {
		if counts[c] == 0 {
			continue
		}
		s.Classes = append(s.Classes, c)
		s.Counts = append(s.Counts, counts[c])
		centroids = append(centroids, unitFloat64(sums[c]))
	}
	k := len(s.Classes)
	if k < 2 {
		return nil, fmt.Errorf("cluster statistics: %d class(es) present in %d rows, expected at least 2", k, f.N)
	}
	pos := make([]int, classes) // class -> index in s.Classes
	for i, c := range s.Classes {
		pos[c] = i
	}
	s.IntraVariance = make([]float64, k)
	for i := 0; i < f.N; i++ {
		p := pos[f.Labels[i]]
		eval.NormalizeInto(unit, f.Row(i))
		var dot float64
		for j, v := range unit {
			dot += centroids[p][j] * float64(v)
		}
		s.IntraVariance[p] += (dot - 1) * (dot - 1)
	}
	s.InterSimilarity = make([]float64, k)
	for a := 0; a < k; a++ {
		s.IntraVariance[a] /= float64(s.Counts[a])
		for b := 0; b < k; b++ {
			if a != b {
				var dot float64
				for j := range centroids[a] {
					dot += centroids[a][j] * centroids[b][j]
				}
				s.InterSimilarity[a] += dot
			}
		}
		s.InterSimilarity[a] /= float64(k - 1)
		s.MeanIntraVariance += s.IntraVariance[a] / float64(k)
		s.MeanInterSimilarity += s.InterSimilarity[a] / float64(k)
	}
	return s, nil
}

// unitFloat64 returns v / max(‖v‖, 1e-12).
func unitFloat64(v []float64) []float64 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	inv := 1 / math.Max(math.Sqrt(n), 1e-12)
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}
