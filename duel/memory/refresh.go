package memory

import (
	"fmt"
	"slices"
)

// Stalest returns the positions of the n rows held whose features are the
// oldest (computed at the earliest step, on entry or by Refresh; ties: the
// lowest position first), in increasing position order. It returns every
// position when n >= Len().
func (m *Memory) Stalest(n int) []int {
	k := m.Len()
	pos := make([]int, k)
	for i := range pos {
		pos[i] = i
	}
	if n >= k {
		return pos
	}
	if n <= 0 {
		return nil
	}
	slices.SortStableFunc(pos, func(a, b int) int {
		switch {
		case m.fresh[a] < m.fresh[b]:
			return -1
		case m.fresh[a] > m.fresh[b]:
			return 1
		}
		return 0
	})
	pos = pos[:n]
	slices.Sort(pos)
	return pos
}

// Refresh replaces the features of the rows at positions pos with rows
// (len(pos) x Z, row-major), computed at step by a newer encoder. Ids,
// labels and entry steps are unchanged. Rows are L2-normalised; a zero or
// non-finite row, a position out of range or a repeated position is an
// error and leaves the memory unchanged. The policy recomputes its carried
// state at the next Add.
//
// Algorithm 1 of the paper scores the rows held with the current encoder
// f_θ; the implemented version (Appendix D) keeps the features computed when
// each row entered. Refreshing the stalest rows at every step keeps the
// features the policy compares, and the negatives, within a bounded age.
func (m *Memory) Refresh(pos []int, rows []float32, step int) error {
	if len(rows) != len(pos)*m.z {
		return fmt.Errorf("memory refresh: %d values for %d rows of %d", len(rows), len(pos), m.z)
	}
	seen := make(map[int]bool, len(pos))
	for _, p := range pos {
		if p < 0 || p >= m.Len() {
			return fmt.Errorf("memory refresh: position %d, expected 0..%d", p, m.Len()-1)
		}
		if seen[p] {
			return fmt.Errorf("memory refresh: position %d given twice", p)
		}
		seen[p] = true
	}
	fresh := make([]float32, len(rows))
	if err := normalizeRows(fresh, rows, m.z); err != nil {
		return fmt.Errorf("memory refresh: %w", err)
	}
	for i, p := range pos {
		copy(m.rows[p*m.z:(p+1)*m.z], fresh[i*m.z:(i+1)*m.z])
		m.fresh[p] = int64(step)
	}
	if len(pos) > 0 {
		m.changed()
	}
	return nil
}

// Fresh returns the step at which the features of each row held were
// computed (the memory's own slice).
func (m *Memory) Fresh() []int64 { return m.fresh }
