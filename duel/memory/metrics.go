package memory

import (
	"fmt"
	"math"
	"slices"
)

// Distinctiveness returns the distinctiveness information of each row held,
// -log(mean over the rows held of q), the quantity DUEL minimises when it
// evicts (Eq. 10; it uses the same exact similarities, so the row DUEL
// evicts first is the one with the lowest value, ties to the lowest position).
func (m *Memory) Distinctiveness() []float64 {
	n, z := m.Len(), m.z
	out := make([]float64, n)
	if n == 0 {
		return out
	}
	var g gridSet
	g.reset(n, z)
	for r := 0; r < n; r++ {
		g.setUnit(r, m.rows[r*z:(r+1)*z])
	}
	const panel = 256
	tmp := make([]int32, min(panel, n)*n)
	for r0 := 0; r0 < n; r0 += panel {
		rn := min(panel, n-r0)
		g.dots(tmp, n, g.rows[r0*z:(r0+rn)*z], rn)
		for r := 0; r < rn; r++ {
			out[r0+r] = info(sumQ(tmp[r*n:(r+1)*n]) / float64(n))
		}
	}
	return out
}

// ClassCounts returns how many rows held have each label 0..numClasses-1.
// Rows without a label (-1) are not counted; a label outside the range is
// an error.
func (m *Memory) ClassCounts(numClasses int) ([]int, error) {
	counts := make([]int, numClasses)
	for i, l := range m.labels {
		switch {
		case l < 0:
			continue
		case int(l) >= numClasses:
			return nil, fmt.Errorf("memory row %d has label %d, expected 0..%d", i, l, numClasses-1)
		}
		counts[l]++
	}
	return counts, nil
}

// ClassEntropy returns the entropy, in nats, of the labels of the rows
// held; rows without a label (-1) are left out. It is 0 when no row has a
// label.
func (m *Memory) ClassEntropy() float64 {
	counts := map[int32]int{}
	total := 0
	for _, l := range m.labels {
		if l >= 0 {
			counts[l]++
			total++
		}
	}
	return entropy(counts, total)
}

// Entropy returns the entropy in nats of a distribution given by counts.
func Entropy(counts []int) float64 {
	m := map[int32]int{}
	total := 0
	for c, n := range counts {
		m[int32(c)] = n
		total += n
	}
	return entropy(m, total)
}

// entropy sums in label order, so that the result does not depend on map
// iteration order.
func entropy(counts map[int32]int, total int) float64 {
	labels := make([]int32, 0, len(counts))
	for l := range counts {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	var h float64
	for _, l := range labels {
		if n := counts[l]; n > 0 {
			p := float64(n) / float64(total)
			h -= p * math.Log(p)
		}
	}
	return h
}

// median returns the median of v (v is reordered); 0 for no value.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if n := len(v); n%2 == 1 {
		return v[n/2]
	} else {
		return (v[n/2-1] + v[n/2]) / 2
	}
}

// ScoreByClass returns, for each class 0..numClasses-1, the mean DUEL score
// (the mean q of a row with the rows held, Distinctiveness's exp(-I_d)) of
// the rows of that class, in standard deviations of the score over all the
// labelled rows from their mean: how strongly the score singles out a
// class. DUEL evicts the highest scores first, so a class far above zero is
// the one it thins out. A class without rows gets NaN; with fewer than two
// labelled rows, or rows all alike, every entry is NaN.
func (m *Memory) ScoreByClass(numClasses int) ([]float64, error) {
	if _, err := m.ClassCounts(numClasses); err != nil {
		return nil, err
	}
	info := m.Distinctiveness()
	sum := make([]float64, numClasses)
	cnt := make([]int, numClasses)
	var all []float64
	for i, l := range m.labels {
		if l < 0 {
			continue
		}
		s := math.Exp(-info[i])
		sum[l] += s
		cnt[l]++
		all = append(all, s)
	}
	out := make([]float64, numClasses)
	for c := range out {
		out[c] = math.NaN()
	}
	if len(all) < 2 {
		return out, nil
	}
	var mean, sd float64
	for _, s := range all {
		mean += s
	}
	mean /= float64(len(all))
	for _, s := range all {
		sd += (s - mean) * (s - mean)
	}
	sd = math.Sqrt(sd / float64(len(all)))
	if sd == 0 {
		return out, nil
	}
	for c := range out {
		if cnt[c] > 0 {
			out[c] = (sum[c]/float64(cnt[c]) - mean) / sd
		}
	}
	return out, nil
}
