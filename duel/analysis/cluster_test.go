package analysis

import (
	"math"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/duel/eval"
	"github.com/duel-ssl/duel/duel/memory"
)

func TestClusterHandComputed(t *testing.T) {
	s3 := math.Sqrt(3) / 2
	for _, tc := range []struct {
		name                 string
		x                    []float32
		labels               []int32
		classes              []int
		intra, inter         []float64
		meanIntra, meanInter float64
	}{
		{
			// class 0: (1,0), (0,1) -> r̄0 = (1,1)/√2, each dot 1/√2, variance (1/√2-1)² = 1.5-√2;
			// class 1: (-2,0) -> r̄1 = (-1,0), variance 0; r̄0·r̄1 = -1/√2.
			name:      "two classes",
			x:         []float32{1, 0, 0, 1, -2, 0},
			labels:    []int32{0, 0, 1},
			classes:   []int{0, 1},
			intra:     []float64{1.5 - math.Sqrt2, 0},
			inter:     []float64{-1 / math.Sqrt2, -1 / math.Sqrt2},
			meanIntra: (1.5 - math.Sqrt2) / 2, meanInter: -1 / math.Sqrt2,
		},
		{
			// three single points 120° apart (scaled: norms do not matter), labels with gaps
			name:      "120 degrees",
			x:         []float32{3, 0, float32(-0.5 * 2), float32(s3 * 2), -0.5, float32(-s3)},
			labels:    []int32{0, 5, 2},
			classes:   []int{0, 2, 5},
			intra:     []float64{0, 0, 0},
			inter:     []float64{-0.5, -0.5, -0.5},
			meanIntra: 0, meanInter: -0.5,
		},
		{
			// class 0: (1,0),(1,0),(0,1) -> mean (2/3,1/3), r̄0 = (2,1)/√5, dots 2/√5, 2/√5, 1/√5;
			// class 1: (0,-1) -> r̄1 = (0,-1); r̄0·r̄1 = -1/√5.
			name:      "unequal counts",
			x:         []float32{1, 0, 1, 0, 0, 1, 0, -1},
			labels:    []int32{0, 0, 0, 1},
			classes:   []int{0, 1},
			intra:     []float64{(2*math.Pow(2/math.Sqrt(5)-1, 2) + math.Pow(1/math.Sqrt(5)-1, 2)) / 3, 0},
			inter:     []float64{-1 / math.Sqrt(5), -1 / math.Sqrt(5)},
			meanIntra: (2*math.Pow(2/math.Sqrt(5)-1, 2) + math.Pow(1/math.Sqrt(5)-1, 2)) / 6, meanInter: -1 / math.Sqrt(5),
		},
	} {
		f, err := eval.NewFeatures(tc.x, tc.labels, 2)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Cluster(f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
		if !slices.Equal(s.Classes, tc.classes) {
			t.Errorf("%s: classes %v, expected %v", tc.name, s.Classes, tc.classes)
		}
		for i := range tc.intra {
			if !near(s.IntraVariance[i], tc.intra[i]) || !near(s.InterSimilarity[i], tc.inter[i]) {
				t.Errorf("%s: class %d: intra %v inter %v, expected %v %v", tc.name, i, s.IntraVariance[i], s.InterSimilarity[i], tc.intra[i], tc.inter[i])
			}
		}
		if !near(s.MeanIntraVariance, tc.meanIntra) || !near(s.MeanInterSimilarity, tc.meanInter) {
			t.Errorf("%s: means %v %v, expected %v %v", tc.name, s.MeanIntraVariance, s.MeanInterSimilarity, tc.meanIntra, tc.meanInter)
		}
	}
}

func TestClusterNeedsTwoClasses(t *testing.T) {
	for _, labels := range [][]int32{{}, {3, 3}} {
		f, _ := eval.NewFeatures(make([]float32, 2*len(labels)), labels, 2)
		if _, err := Cluster(f); err == nil {
			t.Errorf("labels %v: no error", labels)
		}
	}
}

func TestClassEntropy(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   float64
	}{
		{nil, 0},
		{[]int{0, 0}, 0},
		{[]int{5}, 0},
		{[]int{3, 0, 3}, math.Log(2)},
		{[]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, math.Log(10)},
		{[]int{3, 1}, -(0.75*math.Log(0.75) + 0.25*math.Log(0.25))},
		{[]int{7, 2, 9, 1, 0, 4}, memory.Entropy([]int{7, 2, 9, 1, 0, 4})},
	} {
		if got := ClassEntropy(tc.counts); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ClassEntropy(%v) = %v, expected %v", tc.counts, got, tc.want)
		}
	}
}

func TestClassCounts(t *testing.T) {
	got, err := ClassCounts([]int32{0, 2, 2, 1, 2}, 4)
	if err != nil || !slices.Equal(got, []int{1, 1, 3, 0}) {
		t.Errorf("ClassCounts = %v, %v", got, err)
	}
	for _, l := range []int32{-1, 4} {
		if _, err := ClassCounts([]int32{0, l}, 4); err == nil {
			t.Errorf("label %d: no error", l)
		}
	}
}
