package memory

import (
	"fmt"
	"math"
	"runtime"
	"sort"

	"github.com/duel-ssl/duel/internal/par"
)

// Memory is the active memory: up to K rows of Z float32 values, each with
// the id of its sample, a label (-1 when unknown) and the step at which it
// entered, kept in order (position 0 is the oldest survivor).
type Memory struct {
	k, z   int
	policy Policy
	safe   bool
	maxAge int // rows older than this many steps leave first; 0 = no limit

	rows   []float32 // Len() x Z, L2-normalised
	ids    []int64
	labels []int32
	steps  []int64
	uses   []int64 // steps at which each row was drawn as a negative
	fresh  []int64 // step at which each row's features were computed (entry or Refresh)
	seen   int64   // rows offered so far
	gen    uint64  // incremented at every change of rows
	// applied is one more than the generation of the arrival whose
	// evictions made the rows, 0 when they changed otherwise since
	// (see Lineage).
	applied uint64

	batch    []float32 // scratch: the normalised incoming rows of the last Add
	lastB    int       // rows of the last Add in batch
	lastStep int64     // step of the last Add
	// A large batch taken whole while the memory fills is normalised
	// straight into the rows (see Add): its rows are those at batchAt
	// while the rows are still those of generation batchGen.
	batchInRows bool
	batchAt     int
	batchGen    uint64
	moved       []float32 // scratch: rows apply reads after they are overwritten
}

// directValues is the size (in values) from which a batch the memory takes
// whole, filling, is normalised straight into the rows instead of the
// scratch batch: the first fill of a large memory (bench step's, memory
// replay's) would otherwise hold a second copy of it for as long as the
// memory lives. Training batches (B x Z) stay well below it.
const directValues = 1 << 22

// An Option configures a Memory.
type Option func(*Memory)

// WithMaxAge makes Add remove the rows that entered more than age steps
// before the incoming batch before anything else happens, so that no row
// outlives age steps; the batch then refills their places and the policy
// handles the rest. Zero (the default) keeps rows as long as the policy
// does. It bounds how stale the features held can be: a policy that never
// evicts some rows (DUEL keeps the rows most opposed to the others) otherwise
// keeps rows embedded by the encoder of the first steps forever.
func WithMaxAge(age int) Option { return func(m *Memory) { m.maxAge = age } }

// WithSafeUpdate makes Add keep the old memory when the policy's update
// would lower its distinctiveness information, as Algorithm 2 (Appendix C)
// does. See SafeCheck.
func WithSafeUpdate(on bool) Option { return func(m *Memory) { m.safe = on } }

// New returns an empty memory of k rows of z values, managed by policy.
// The policy value belongs to the memory from then on.
func New(k, z int, policy Policy, opts ...Option) (*Memory, error) {
	switch {
	case k < 1:
		return nil, fmt.Errorf("memory size %d, expected at least 1", k)
	case z < 1 || z > maxZ:
		return nil, fmt.Errorf("row length %d, expected 1..%d", z, maxZ)
	case k > maxRows:
		return nil, fmt.Errorf("memory size %d, expected at most %d", k, maxRows)
	case policy == nil:
		return nil, fmt.Errorf("no memory policy, expected one of %v", PolicyNames())
	}
	m := &Memory{k: k, z: z, policy: policy}
	for _, o := range opts {
		o(m)
	}
	if m.maxAge < 0 {
		return nil, fmt.Errorf("maximum row age %d, expected >= 0 (0 = no limit)", m.maxAge)
	}
	return m, nil
}

// Stats describes what one Add did.
type Stats struct {
	Expired  int  // rows removed for being older than the maximum age
	Filled   int  // rows appended while the memory was not full
	Entered  int  // rows that entered through the policy
	Evicted  int  // rows held before the call that left
	Rejected bool // the safe update kept the old memory
	// Distinctiveness information of the memory before and after the
	// policy's update, estimated on the batch (only with the safe update).
	InfoBefore, InfoAfter float64
}

// Add offers a batch of rows (B x Z, row-major) with their sample ids and
// labels, at training step step. ids may be nil (the rows' indices in the
// stream are used) and labels may be nil (unknown, -1). Rows are
// L2-normalised; a zero or non-finite row is an error and leaves the memory
// unchanged. While the memory is not full, rows are appended; the rest of
// the batch goes through the policy.
func (m *Memory) Add(rows []float32, ids []int64, labels []int32, step int) (Stats, error) {
	var st Stats
	if m.z == 0 {
		return st, fmt.Errorf("memory add: memory not initialised (use New or UnmarshalBinary)")
	}
	if len(rows)%m.z != 0 {
		return st, fmt.Errorf("memory add: %d values, expected a multiple of the row length %d", len(rows), m.z)
	}
	b := len(rows) / m.z
	if ids != nil && len(ids) != b {
		return st, fmt.Errorf("memory add: %d ids for %d rows", len(ids), b)
	}
	if labels != nil && len(labels) != b {
		return st, fmt.Errorf("memory add: %d labels for %d rows", len(labels), b)
	}
	if len(rows) >= directValues && b <= m.k-m.Len() {
		return m.addDirect(rows, ids, labels, step)
	}
	m.batch = grow(m.batch, len(rows))
	if err := normalizeRows(m.batch, rows, m.z); err != nil {
		m.lastB = 0
		return st, fmt.Errorf("memory add: %w", err)
	}
	m.lastB, m.lastStep, m.batchInRows = b, int64(step), false
	seen0 := m.seen
	meta := func(r int) (int64, int32) {
		id, label := seen0+int64(r), int32(-1)
		if ids != nil {
			id = ids[r]
		}
		if labels != nil {
			label = labels[r]
		}
		return id, label
	}

	st.Expired = m.expire(step)

	// Fill phase.
	st.Filled = min(b, m.k-m.Len())
	if st.Filled > 0 {
		m.reserve()
	}
	for r := 0; r < st.Filled; r++ {
		id, label := meta(r)
		m.rows = append(m.rows, m.batch[r*m.z:(r+1)*m.z]...)
		m.ids = append(m.ids, id)
		m.labels = append(m.labels, label)
		m.steps = append(m.steps, int64(step))
		m.uses = append(m.uses, 0)
		m.fresh = append(m.fresh, int64(step))
	}
	if st.Filled > 0 {
		m.changed()
	}
	m.seen += int64(st.Filled)
	rest := m.batch[st.Filled*m.z : b*m.z]
	if len(rest) == 0 {
		return st, nil
	}

	// Policy phase.
	a := &Arrival{Memory: m.rows, Batch: rest, Z: m.z, Seen: m.seen, lineage: Lineage{owner: m, gen: m.gen, applied: m.applied}}
	nb := a.B()
	ev, err := m.policy.Evict(a)
	if err == nil {
		err = checkEvictions(m.policy.Name(), ev, m.k, nb)
	}
	if err != nil {
		m.changed() // the policy's carried state may be stale
		return st, fmt.Errorf("memory add: %w", err)
	}
	m.seen += int64(nb)
	keep := keptPositions(ev, m.k)
	if m.safe {
		st.InfoBefore, st.InfoAfter = SafeCheck(m.rows, rest, m.z, keep)
		if st.InfoAfter < st.InfoBefore {
			st.Rejected = true
			return st, nil
		}
	}
	for _, p := range keep {
		if p >= m.k {
			st.Entered++
		}
	}
	st.Evicted = st.Entered // the memory stays full
	m.apply(keep, st.Filled, meta, step)
	m.applied = a.lineage.gen + 1
	return st, nil
}

// addDirect is Add for a batch of b rows that all fit in the memory as it
// is (it fills): they are normalised straight into the rows' free capacity,
// which neither expire (it only moves rows held to lower positions) nor a
// failed normalisation (the length is unchanged) disturbs, and the rows of
// the batch are then read there (batchSimilarities) while the rows stay
// unchanged. The result is Add's.
func (m *Memory) addDirect(rows []float32, ids []int64, labels []int32, step int) (Stats, error) {
	var st Stats
	z, b := m.z, len(rows)/m.z
	m.reserve()
	n0 := len(m.rows)
	if err := normalizeRows(m.rows[n0:n0+len(rows)], rows, z); err != nil {
		m.lastB = 0
		return st, fmt.Errorf("memory add: %w", err)
	}
	m.batch = nil // the batch's rows are in the memory; a large scratch would stay
	m.lastB, m.lastStep = b, int64(step)
	st.Expired = m.expire(step)
	at := len(m.rows)
	copy(m.rows[at:at+len(rows)], m.rows[n0:n0+len(rows)]) // nothing to move unless rows expired
	m.rows = m.rows[:at+len(rows)]
	for r := 0; r < b; r++ {
		id, label := m.seen+int64(r), int32(-1)
		if ids != nil {
			id = ids[r]
		}
		if labels != nil {
			label = labels[r]
		}
		m.ids = append(m.ids, id)
		m.labels = append(m.labels, label)
		m.steps = append(m.steps, int64(step))
		m.uses = append(m.uses, 0)
		m.fresh = append(m.fresh, int64(step))
	}
	st.Filled = b
	m.changed()
	m.seen += int64(b)
	m.batchInRows, m.batchAt, m.batchGen = true, at/z, m.gen
	return st, nil
}

// reserve gives the rows and their metadata the capacity of a full memory,
// so that filling it appends without reallocating (slices growing by
// appends leave several copies of the memory to the garbage collector, and
// the old one and the new one are both live while one grows).
func (m *Memory) reserve() {
	m.rows = reserve(m.rows, m.k*m.z)
	m.ids = reserve(m.ids, m.k)
	m.labels = reserve(m.labels, m.k)
	m.steps = reserve(m.steps, m.k)
	m.uses = reserve(m.uses, m.k)
	m.fresh = reserve(m.fresh, m.k)
}

// reserve returns s (same length and elements) with a capacity of at least
// n, allocating exactly n when it must.
func reserve[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s
	}
	t := make([]T, len(s), n)
	copy(t, s)
	return t
}

// expire removes the rows that entered more than maxAge steps before step,
// keeping the order of the others, and returns how many left.
func (m *Memory) expire(step int) int {
	if m.maxAge == 0 {
		return 0
	}
	limit := int64(step) - int64(m.maxAge)
	j := 0
	for i := range m.ids {
		if m.steps[i] < limit {
			continue
		}
		if i != j {
			copy(m.rows[j*m.z:(j+1)*m.z], m.rows[i*m.z:(i+1)*m.z])
			m.ids[j], m.labels[j], m.steps[j], m.uses[j], m.fresh[j] = m.ids[i], m.labels[i], m.steps[i], m.uses[i], m.fresh[i]
		}
		j++
	}
	gone := len(m.ids) - j
	if gone > 0 {
		m.rows, m.ids, m.labels, m.steps, m.uses, m.fresh = m.rows[:j*m.z], m.ids[:j], m.labels[:j], m.steps[:j], m.uses[:j], m.fresh[:j]
		m.changed()
	}
	return gone
}

// MaxAge returns the maximum age of a row in steps (0: no limit).
func (m *Memory) MaxAge() int { return m.maxAge }

// SafeUpdate reports whether Add keeps the old memory when the policy's
// update would lose information (WithSafeUpdate).
func (m *Memory) SafeUpdate() bool { return m.safe }

// keptPositions returns, in order, the positions (rows held, then batch
// rows) that survive the evictions ev.
func keptPositions(ev []int, k int) []int {
	gone := make([]bool, k+len(ev))
	for _, p := range ev {
		gone[p] = true
	}
	keep := make([]int, 0, k)
	for p, g := range gone {
		if !g {
			keep = append(keep, p)
		}
	}
	return keep
}

// apply replaces the memory with the rows at positions keep (increasing)
// of the rows held followed by the batch rows m.batch[skip:], in place,
// on all cores: the j-th survivor held comes from position keep[j] >= j,
// at most as many positions on as there are evictions, so that moving
// the rows down in order reads each row before it is overwritten. Each
// core moves a span of positions in order; the few rows a span reads from
// the next spans (evictions of them at most) are copied aside first. The
// metadata moves the same way.
func (m *Memory) apply(keep []int, skip int, meta func(int) (int64, int32), step int) {
	z, k := m.z, m.k
	held := sort.SearchInts(keep, k) // keep[:held] are rows held
	spans := 1
	if len(keep) >= 2*64 {
		spans = min(runtime.GOMAXPROCS(0), len(keep)/64)
	}
	bound := func(c int) int { return c * len(keep) / spans }
	// aside[c] holds rows bound(c+1)..last[c] (positions), which span c
	// reads and span c+1 or later may overwrite first.
	aside, last := make([]int, spans), make([]int, spans)
	n := 0
	for c := 0; c+1 < spans; c++ {
		j0, j1 := bound(c), bound(c+1)
		last[c] = j1 - 1
		if h := min(j1, held) - 1; h >= j0 {
			last[c] = max(last[c], keep[h])
		}
		aside[c] = n
		n += (last[c] - j1 + 1) * z
	}
	m.moved = grow(m.moved, n)
	for c := 0; c+1 < spans; c++ {
		j1 := bound(c + 1)
		copy(m.moved[aside[c]:aside[c]+(last[c]-j1+1)*z], m.rows[j1*z:(last[c]+1)*z])
	}
	move := func(c int) {
		j0, j1 := bound(c), bound(c+1)
		for j := j0; j < j1; j++ {
			p := keep[j]
			var src []float32
			switch {
			case p == j:
				continue // already in place
			case p >= k:
				p = skip + p - k
				src = m.batch[p*z : (p+1)*z]
			case p >= j1:
				o := aside[c] + (p-j1)*z
				src = m.moved[o : o+z]
			default:
				src = m.rows[p*z : (p+1)*z] // p > j: not overwritten yet
			}
			copy(m.rows[j*z:(j+1)*z], src)
		}
	}
	if spans == 1 {
		move(0)
	} else {
		par.Run(spans, move)
	}
	for j, p := range keep {
		if p == j {
			continue // already in place
		}
		if p < m.k {
			m.ids[j], m.labels[j], m.steps[j], m.uses[j], m.fresh[j] = m.ids[p], m.labels[p], m.steps[p], m.uses[p], m.fresh[p]
			continue
		}
		m.ids[j], m.labels[j] = meta(skip + p - m.k)
		m.steps[j], m.uses[j], m.fresh[j] = int64(step), 0, int64(step)
	}
	m.gen++ // Add records which arrival made the rows (m.applied)
}

// changed records a change of the rows other than applying a policy's
// evictions: the next arrival follows none (Lineage.Follows).
func (m *Memory) changed() {
	m.gen++
	m.applied = 0
}

// SetRows replaces the feature rows of the memory (Len() x Z), for callers
// that re-embed the rows held with a newer encoder. Ids, labels and steps
// are unchanged. Rows are L2-normalised; policies recompute their carried
// state at the next Add.
func (m *Memory) SetRows(rows []float32) error {
	if len(rows) != len(m.rows) {
		return fmt.Errorf("memory set rows: %d values, expected %d (%d rows of %d)", len(rows), len(m.rows), m.Len(), m.z)
	}
	fresh := make([]float32, len(rows))
	if err := normalizeRows(fresh, rows, m.z); err != nil {
		return fmt.Errorf("memory set rows: %w", err)
	}
	m.rows = fresh
	m.changed()
	return nil
}

// Len returns the number of rows held.
func (m *Memory) Len() int { return len(m.ids) }

// Size returns K, the capacity.
func (m *Memory) Size() int { return m.k }

// Dim returns Z, the row length.
func (m *Memory) Dim() int { return m.z }

// Seen returns the number of rows offered so far.
func (m *Memory) Seen() int64 { return m.seen }

// Policy returns the memory's policy.
func (m *Memory) Policy() Policy { return m.policy }

// Rows returns the rows held (Len() x Z, row-major, L2-normalised), oldest
// first. The slice is the memory's own: read it, do not modify it; it is
// valid until the next change.
func (m *Memory) Rows() []float32 { return m.rows }

// IDs returns the sample id of each row held (the memory's own slice).
func (m *Memory) IDs() []int64 { return m.ids }

// Labels returns the label of each row held, -1 when unknown (the memory's
// own slice).
func (m *Memory) Labels() []int32 { return m.labels }

// Steps returns the step at which each row held entered (the memory's own
// slice).
func (m *Memory) Steps() []int64 { return m.steps }

func nan() float64 { return math.NaN() }
