package memory

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// Usage summarises the rows held at one training step: how long they have
// been in the memory, how often they served as negatives, and how close
// they are to the rows of the latest batch. It is what the training log
// records to tell a memory that follows the encoder from one that holds
// stale rows.
type Usage struct {
	// AgeMean, AgeMedian and AgeMax are the rows' ages in steps (the step
	// given minus the step at which each row entered).
	AgeMean, AgeMedian, AgeMax float64
	// StaleMean and StaleMax are the ages in steps of the rows' features
	// (since entry, or since the last Refresh).
	StaleMean, StaleMax float64
	// UsesMean and UsesMax count how many steps each row was drawn as a
	// negative (see CountNegatives).
	UsesMean, UsesMax float64
	// BatchCos is the mean cosine similarity between the rows of the latest
	// batch offered and the rows held whose features were computed before
	// it; WithinCos is
	// the mean cosine between distinct rows of that batch. A memory of
	// current rows has BatchCos close to WithinCos; rows from an older
	// encoder drift apart from the batch. Both are NaN when undefined.
	BatchCos, WithinCos float64
}

// CountNegatives records that the rows at positions pos (all rows held when
// pos is nil) were drawn as negatives once more.
func (m *Memory) CountNegatives(pos []int) error {
	if pos == nil {
		for i := range m.uses {
			m.uses[i]++
		}
		return nil
	}
	for _, p := range pos {
		if p < 0 || p >= len(m.uses) {
			return fmt.Errorf("memory count negatives: position %d, expected 0..%d", p, len(m.uses)-1)
		}
		m.uses[p]++
	}
	return nil
}

// Uses returns how many steps each row held was drawn as a negative (the
// memory's own slice).
func (m *Memory) Uses() []int64 { return m.uses }

// Usage summarises the rows held at step (see Usage). The batch
// similarities use the rows of the last call to Add.
func (m *Memory) Usage(step int) Usage {
	n := m.Len()
	u := Usage{AgeMean: nan(), AgeMedian: nan(), AgeMax: nan(), StaleMean: nan(), StaleMax: nan(),
		UsesMean: nan(), UsesMax: nan(), BatchCos: nan(), WithinCos: nan()}
	if n > 0 {
		ages := make([]float64, n)
		var sumAge, sumUse, sumStale float64
		u.AgeMax, u.UsesMax, u.StaleMax = 0, 0, 0
		for i := 0; i < n; i++ {
			ages[i] = float64(int64(step) - m.steps[i])
			stale := float64(int64(step) - m.fresh[i])
			sumAge += ages[i]
			sumStale += stale
			u.StaleMax = max(u.StaleMax, stale)
			sumUse += float64(m.uses[i])
			u.AgeMax = max(u.AgeMax, ages[i])
			u.UsesMax = max(u.UsesMax, float64(m.uses[i]))
		}
		u.AgeMean, u.UsesMean, u.StaleMean = sumAge/float64(n), sumUse/float64(n), sumStale/float64(n)
		slices.Sort(ages)
		u.AgeMedian = (ages[(n-1)/2] + ages[n/2]) / 2
	}
	u.BatchCos, u.WithinCos = m.batchSimilarities()
	return u
}

// batchSimilarities computes Usage.BatchCos and Usage.WithinCos from the
// normalised rows of the last Add (kept in m.batch, or in the rows for a
// large batch taken whole, while they are unchanged) and the rows held
// that entered before that call.
func (m *Memory) batchSimilarities() (batchCos, withinCos float64) {
	batchCos, withinCos = nan(), nan()
	b, z := m.lastB, m.z
	var x []float32
	switch {
	case b == 0:
		return
	case m.batchInRows:
		if m.gen != m.batchGen {
			return // the rows changed since
		}
		x = m.rows[m.batchAt*z : (m.batchAt+b)*z]
	case len(m.batch) < b*z:
		return
	default:
		x = m.batch[:b*z]
	}
	older := m.olderRows()
	if k := len(older) / z; k > 0 {
		c := make([]float32, b*k)
		gemm.Sgemm(false, true, b, k, z, 1, x, z, older, z, 0, c, k)
		batchCos = meanOf(c)
	}
	if b > 1 {
		c := make([]float32, b*b)
		gemm.Sgemm(false, true, b, b, z, 1, x, z, x, z, 0, c, b)
		var s float64
		for i := 0; i < b; i++ {
			for j := 0; j < b; j++ {
				if i != j {
					s += float64(c[i*b+j])
				}
			}
		}
		withinCos = s / float64(b*(b-1))
	}
	return
}

func meanOf(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}

// olderRows returns the rows held whose features were computed before the
// last Add, in order: the rows themselves when they are one run of
// positions (the usual case: the rows that entered last are at the end),
// else a copy.
func (m *Memory) olderRows() []float32 {
	z := m.z
	n, first, lastPos := 0, -1, -1
	for i, s := range m.fresh {
		if s < m.lastStep {
			if first < 0 {
				first = i
			}
			n, lastPos = n+1, i
		}
	}
	if n == 0 {
		return nil
	}
	if lastPos-first+1 == n {
		return m.rows[first*z : (lastPos+1)*z]
	}
	older := make([]float32, 0, n*z)
	for i, s := range m.fresh {
		if s < m.lastStep {
			older = append(older, m.rows[i*z:(i+1)*z]...)
		}
	}
	return older
}
