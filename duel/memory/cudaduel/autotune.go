package cudaduel

import (
	"fmt"
	"slices"
	"time"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
)

// SelectAuto measures, on the memory's own updates, whether duel_lean.cu's
// kernel runs the steps faster than the one-block kernels on this GPU,
// and whether it runs faster still asking L2 for the runners-up's rows
// each step (MemoryOptions.Prefetch), instead of trusting figures from
// another card:
//
//   - The first update runs the one-block kernels, so that a memory used
//     once (Update, the one-shot API) pays nothing.
//   - The second (and the later ones until it can) is the cross-check:
//     the lean kernel runs first (with the prefetch, so that its every
//     path runs), its outputs are kept on the host, the slot state is
//     restored, and the one-block kernel runs on the same inputs.
//     Evicted, the slot state and the scores must be equal bit for bit;
//     where they are not (a GPU that compiles the lean kernel wrongly),
//     the lean kernel is off for the memory's life, the reason in
//     leanErr. The one-block kernel's results are the update's either
//     way.
//   - The next updates take the three in turn (the lean kernel, the
//     one-block kernel, the lean kernel with the prefetch; two where the
//     memory's options already turn the prefetch on for every kernel),
//     tuneSamples each, timed by events around the selection (the wall
//     clock on GPUs that run their work before returning), at the
//     cross-check's batch size; the one with the lowest median runs every
//     update after.
//
// SelectionKernel says which one ran, and AutoTune what was measured.

// tuneSamples is the number of timed selections of each kernel that
// decide between them.
const tuneSamples = 5

// autoTune is SelectAuto's measurement (Memory.tune).
type autoTune struct {
	b           int             // the batch size the samples are taken at (the cross-check's)
	checked     bool            // the cross-check passed
	off         bool            // the lean kernel is not a candidate (refused, too large, or failed the cross-check)
	lean, block []time.Duration // the timed selections
	leanPf      []time.Duration // the lean kernel's with the prefetch (none where the options set it for every kernel)
	blockKernel string          // the one-block kernel timed (duel_select_shared or duel_select_global)
	decided     bool
	useLean     bool // the decision
	usePrefetch bool // the lean kernel with the prefetch (useLean too)
}

// leanTurn says what the lean kernel does in this update of k rows held
// and b incoming under SelectAuto: run, run with the prefetch (the
// runners-up's rows asked of L2 each step), run first for the
// cross-check, or not run (the one-block kernels run).
type leanTurn int

const (
	leanNo leanTurn = iota
	leanRun
	leanCheck
	leanRunPrefetch
)

// autoLeanTurn returns this update's leanTurn for SelectAuto, starting
// the measurement at the memory's second update (the shared-memory
// opt-in of the lean kernels then, which loads their module: the
// driver's JIT on a machine's first use).
func (m *Memory) autoLeanTurn(k, b int) leanTurn {
	if m.sel != SelectAuto {
		return leanNo
	}
	if m.tune == nil {
		if m.updates < 1 {
			return leanNo
		}
		m.startTune(k, b)
	}
	t := m.tune
	if l, ok := leanFor(k, b, m.lblock); t.off || !ok || leanShared(k, b, l.nt) > m.lshared {
		if !t.checked { // the lean kernel cannot run at this size: not a candidate
			t.off = true
		}
		return leanNo
	}
	switch {
	case !t.checked:
		t.b = b
		return leanCheck
	case t.decided && t.useLean && t.usePrefetch:
		return leanRunPrefetch
	case t.decided && t.useLean:
		return leanRun
	case t.decided || b != t.b:
		return leanNo
	case len(t.lean) <= len(t.block) && (m.prefetch || len(t.lean) <= len(t.leanPf)):
		return leanRun
	case m.prefetch || len(t.block) <= len(t.leanPf):
		return leanNo
	}
	return leanRunPrefetch
}

// startTune begins SelectAuto's measurement: the lean kernels may use
// the memory's dynamic shared memory (opted in where the GPU asks for
// it).
func (m *Memory) startTune(k, b int) {
	m.tune = &autoTune{}
	m.lshared = leanSharedLimit(m.g)
}

// leanOutputs is what a selection leaves of an update (the cross-check
// compares them): evicted, the slot state (rank, slot, src and the b
// moves) and the scores by slot.
type leanOutputs struct {
	ev, slots []int32
	scores    []float64
}

// selectionOutputs copies the last selection's outputs to the host
// (waiting for the device).
func (m *Memory) selectionOutputs(k, b, n int) (leanOutputs, error) {
	o := leanOutputs{ev: make([]int32, b), slots: make([]int32, 3*k+b), scores: make([]float64, k)}
	for _, c := range []struct {
		dst []byte
		src driver.DevicePtr
	}{{cuda.Bytes(o.ev), m.ev}, {cuda.Bytes(o.slots), m.slots}, {cuda.Bytes(o.scores), m.score[n]}} {
		if err := m.g.CopyFromDevice(c.dst, c.src); err != nil {
			return leanOutputs{}, err
		}
	}
	return o, nil
}

// leanFirst runs the cross-check's first half: the lean kernel on the
// update, its outputs copied to the host, the slot state put back as it
// was. It returns nil outputs when the lean kernel did not run (refused:
// runLean turns it off).
func (m *Memory) leanFirst(k, b int, flags int32, c, n int) (*leanOutputs, error) {
	saved := make([]int32, 3*k+m.bcap)
	if err := m.g.CopyFromDevice(cuda.Bytes(saved), m.slots); err != nil {
		return nil, err
	}
	if !m.runLean(k, b, flags, c, n) {
		m.tune.off = true
		return nil, nil
	}
	out, err := m.selectionOutputs(k, b, n)
	if err != nil {
		return nil, err
	}
	if err := m.g.CopyToDevice(m.slots, cuda.Bytes(saved)); err != nil {
		return nil, err
	}
	return &out, nil
}

// crossCheck compares the lean kernel's outputs with those of the
// one-block kernel that ran after it (kernel), and turns the lean kernel
// off, the reason in leanErr, when they differ.
func (m *Memory) crossCheck(lean *leanOutputs, kernel string, k, b, n int) error {
	ref, err := m.selectionOutputs(k, b, n)
	if err != nil {
		return err
	}
	if m.tuneCorrupt != nil {
		m.tuneCorrupt(lean)
	}
	name := m.leanName(k, b)
	diff := func(what string, i int) error {
		return fmt.Errorf("cudaduel: %s's %s differs from %s's at %d on %v (K %d, B %d): SelectAuto runs %s", name, what, kernel, i, m.g, k, b, kernel)
	}
	switch {
	case !slices.Equal(lean.ev, ref.ev):
		m.leanErr = diff("evicted", firstDiff(lean.ev, ref.ev))
	case !slices.Equal(lean.slots, ref.slots):
		m.leanErr = diff("slot state", firstDiff(lean.slots, ref.slots))
	case !slices.Equal(lean.scores, ref.scores):
		m.leanErr = diff("scores", firstDiff(lean.scores, ref.scores))
	default:
		m.tune.checked = true
		return nil
	}
	m.tune.off = true
	return nil
}

// firstDiff returns the first index where a and b (of equal lengths)
// differ.
func firstDiff[T comparable](a, b []T) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// leanName returns the name of the lean kernel for k+b slots.
func (m *Memory) leanName(k, b int) string {
	l, _ := leanFor(k, b, m.lblock)
	return l.name
}

// selectTimer times one selection for SelectAuto's samples.
type selectTimer struct {
	phaseTimer
	turn leanTurn // leanRun, leanRunPrefetch or leanNo (the one-block kernel)
}

// startSelectTimer returns a timer for this update's selection when
// SelectAuto samples it (nil otherwise).
func (m *Memory) startSelectTimer(turn leanTurn, b int) *selectTimer {
	t := m.tune
	if m.sel != SelectAuto || t == nil || !t.checked || t.decided || t.off || b != t.b || turn == leanCheck {
		return nil
	}
	return &selectTimer{phaseTimer: startPhase(m.g), turn: turn}
}

// stop marks the end of the selection's launches.
func (st *selectTimer) stop(g cuda.GPU) {
	if st != nil {
		st.phaseTimer.stop(g)
	}
}

// record adds the timed selection to the samples, once the device is
// past it, and decides when every candidate has tuneSamples; ran is the
// kernel that ran (the lean kernel may have been refused at its launch).
func (m *Memory) record(st *selectTimer, ran string) {
	if st == nil {
		return
	}
	wall := st.wall
	dt, err := st.read(m.g)
	if err != nil { // the fault is reported by the update's next wait
		dt = wall
	}
	t := m.tune
	if (st.turn != leanNo) != (ran == m.leanName(m.k, t.b)) { // refused: the lean kernel is off
		return
	}
	if m.selectClock != nil {
		dt = m.selectClock(st.turn, dt)
	}
	switch st.turn {
	case leanRun:
		t.lean = append(t.lean, dt)
	case leanRunPrefetch:
		t.leanPf = append(t.leanPf, dt)
	default:
		t.block, t.blockKernel = append(t.block, dt), ran
	}
	if len(t.lean) >= tuneSamples && len(t.block) >= tuneSamples && (m.prefetch || len(t.leanPf) >= tuneSamples) {
		t.decided = true
		best := median(t.block)
		if l := median(t.lean); l < best {
			best, t.useLean = l, true
		}
		if !m.prefetch && median(t.leanPf) < best {
			t.useLean, t.usePrefetch = true, true
		}
	}
}

// median returns the median of d (the lower middle of an even count), 0
// for none.
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// AutoTune is what SelectAuto measured on a memory (Memory.AutoTune).
type AutoTune struct {
	// Decided is true once both kernels were timed; Kernel is then the
	// one every update runs.
	Decided bool
	Kernel  string
	// Lean and Block are the median selection times of the lean kernel
	// and of the one-block kernel at the batch size of the measurement,
	// LeanPrefetch the lean kernel's with the prefetch (0 where the
	// memory's options set the prefetch for every kernel: Lean is then
	// with it).
	Lean, Block, LeanPrefetch time.Duration
	// Prefetch is true where the decision is the lean kernel with the
	// prefetch.
	Prefetch bool
	// LeanOff is why the lean kernel is not a candidate (nil: it is):
	// refused by the driver, too large for the update, or different
	// results in the cross-check.
	LeanOff error
}

// AutoTune returns SelectAuto's measurement so far (the zero value before
// it starts, at the second update, and for other selections).
func (m *Memory) AutoTune() AutoTune {
	t := m.tune
	if t == nil {
		return AutoTune{}
	}
	a := AutoTune{Decided: t.decided, Lean: median(t.lean), Block: median(t.block), LeanPrefetch: median(t.leanPf), Prefetch: t.usePrefetch}
	if t.decided {
		a.Kernel = t.blockKernel
		if t.useLean {
			a.Kernel = m.leanName(m.k, t.b)
		}
	}
	if t.off {
		a.LeanOff = m.leanErr
		if a.LeanOff == nil {
			a.LeanOff = fmt.Errorf("cudaduel: no lean kernel fits K %d with batches of %d rows", m.k, t.b)
		}
	}
	return a
}
