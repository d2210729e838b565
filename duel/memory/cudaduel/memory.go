package cudaduel

import (
	"fmt"
	"math/bits"
	"os"
	"time"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/duel/memory"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// Memory is a DUEL memory of K rows of length Z resident on a device:
// it keeps there the memory's rows on duel/memory's similarity grid, the
// rows' scores and the K x K block of their grid dot products (as
// duel/memory's fast path carries them), and all the scratch of an
// update, allocated once. An update copies in only the batch and copies
// out only the evicted positions (the kept ones follow from them); its
// decisions are exactly those of memory.DUEL with the same admission (the
// tests check them).
//
// The rows held live in K slots on the device, in no particular order
// (a batch row kept takes the slot of a row evicted), with a table of the
// position of each slot: nothing is compacted. An update is four steps on
// the device: the batch's grid rows (duel_grid, into slots K..K+B-1); its
// dots with the memory and with itself, B x (K+B), their transpose, K x
// B, and each batch row's sum of dots with the rows before it, in one
// tiled launch (duel_dots: exact, see kernels/cuda/duel.cu); the B
// sequential steps in one block, the
// scores as exact integers packed with the victim order into one uint64
// per candidate, in shared memory when they fit (duel_select_shared, else
// duel_select_global), which also assigns the slots and renumbers the
// positions; and the moved rows' grid rows and similarity rows and
// columns copied into their slots (duel_move), or the next layout's
// whole block gathered into a second matrix by duel_gather (MoveAuto
// measures both, see Move).
//
// Device memory is 4*(K+Bcap)^2 bytes for the similarity matrix
// (K = 4096, Bcap = 256: 76 MB; twice that with MoveGather, and with
// MoveAuto until it decides for duel_move) plus
// 4*(K+Bcap)*Z for the grid. Free
// it with Close: the garbage collector does not. A Memory is not safe
// for concurrent use.
type Memory struct {
	g      cuda.GPU
	k, z   int
	adm    memory.Admission
	block  int
	shared int // dynamic shared memory the selection kernel may use
	sel    Selection
	// prefetch sets SELECT_PREFETCH in the one-block kernels' flags
	// (MemoryOptions.Prefetch).
	prefetch bool
	// cshared is the dynamic shared memory duel_select_cluster's blocks
	// may use (0: the cluster kernel is not to run).
	cshared int
	// cblock is duel_select_cluster's block size (0: clusterBlock).
	cblock int
	// rshared is the dynamic shared memory duel_select_rounds may use (0:
	// the rounds kernel is not to run).
	rshared int
	// roundsErr is why the driver refused duel_select_rounds' launch,
	// after which the memory runs the one-block kernels (nil: never).
	roundsErr error
	// rcap, when positive, replaces roundsCap's candidate count, and
	// rounds8Cap's count a block (tests: a small cap makes rounds end
	// early and exercises the undo).
	rcap int
	// r8shared is the dynamic shared memory duel_select_rounds8's blocks
	// may use (0: the kernel is not to run).
	r8shared int
	// rounds8Err is why the driver refused duel_select_rounds8's launch,
	// after which the memory runs the one-block kernels (nil: never).
	rounds8Err error
	// lshared is the dynamic shared memory duel_lean.cu's kernels may use
	// (0: they are not to run), lblock their block size (leanFor), and
	// leanErr why the driver refused one's launch (nil: never).
	lshared int
	lblock  int
	leanErr error
	// leanTimed makes the lean kernels time their parts (selectStats;
	// leanStats reads them: benchmarks, tests).
	leanTimed bool
	ran       string     // the selection kernel of the last update (tests, benchmarks)
	ranPf     bool       // the last update's lean kernel asked L2 for the runners-up's rows (tests)
	move      Move       // MemoryOptions.Move, or EnvMove's
	mtune     *moveTune  // MoveAuto's measurement (nil before it starts)
	mtimer    *moveTimer // the last update's move, timed for MoveAuto (read by the next update)
	// selectClock, when not nil, replaces the measured time of a
	// selection SelectAuto samples (tests: a GPU on which one kernel is
	// the fastest).
	selectClock func(leanTurn, time.Duration) time.Duration
	// moveClock, when not nil, replaces the measured time of a move
	// (tests: a GPU on which one way is the faster).
	moveClock func(Move, time.Duration) time.Duration
	// clusterErr is why the driver refused duel_select_cluster's launch,
	// after which the memory runs the one-block kernels (nil: never).
	clusterErr error
	// check, when not nil, vets each update's selection kernel once it is
	// launched (tests: the update fails with its error).
	check  func(kernel string) error
	bcap   int // batch rows the buffers hold
	w      int // k + bcap: the row stride of sim
	loaded bool
	closed bool
	cur    int // which of the score buffers holds the memory's scores

	grid  driver.DevicePtr    // (k+bcap) x z floats: grid rows by slot, memory then batch
	sim   driver.DevicePtr    // (k+bcap) x w int32 (and leanTail more): grid dots by slot
	sim2  driver.DevicePtr    // MoveGather, MoveAuto until it decides: sim's twin, which duel_gather writes the next layout into (then they swap)
	score [2]driver.DevicePtr // k doubles: the memory's scores by slot
	slots driver.DevicePtr    // 3k+bcap ints: duel.cu's kept (rank, slot, src, moves)
	gsc   driver.DevicePtr    // k+bcap uint64s: duel_select_global's keys
	psum  driver.DevicePtr    // bcap int64s: duel_dots' batch sums
	ev    driver.DevicePtr    // bcap ints: evicted
	rstat driver.DevicePtr    // roundStatsLen int64s: duel_select_rounds' or duel_select_rounds8's statistics of the last update (roundStats)

	ev32   []int32
	rb     *cuda.Readback // evicted's copy to the host (nil: CopyFromDevice)
	timing *duelTiming    // when not nil, Update adds the time of each phase (benchmarks)

	updates int       // updates run (SelectAuto's measurement starts at the second)
	tune    *autoTune // SelectAuto's measurement (nil before it starts)
	// tuneCorrupt, when not nil, changes the lean kernel's outputs before
	// the cross-check compares them (tests: a GPU that computes wrongly).
	tuneCorrupt func(*leanOutputs)
}

// NewMemory returns an empty DUEL memory of k rows of length z on g
// (call Load before the first update). On a GPU that implements
// cuda.SharedMemoryOptIn (a *cuda.Device), the selection kernel opts in to
// all the dynamic shared memory a block may have.
func NewMemory(g cuda.GPU, k, z int, opt MemoryOptions) (*Memory, error) {
	if noGPU(g) {
		return nil, errNoDevice
	}
	switch {
	case z < 1 || z > duelMaxZ:
		return nil, fmt.Errorf("cudaduel: row length %d, expected 1..%d", z, duelMaxZ)
	case k < 1 || k > duelMaxRows:
		return nil, fmt.Errorf("cudaduel: memory of %d rows, expected 1..%d", k, duelMaxRows)
	case opt.Admission != memory.Protected && opt.Admission != memory.Compete:
		return nil, fmt.Errorf("cudaduel: unknown admission mode %d, expected protected (%d) or compete (%d)", opt.Admission, memory.Protected, memory.Compete)
	case opt.Batch < 0 || opt.Batch > duelMaxRows-k:
		return nil, fmt.Errorf("cudaduel: batch capacity %d, expected 0..%d", opt.Batch, duelMaxRows-k)
	case opt.Selection < SelectAuto || opt.Selection > SelectLean:
		return nil, fmt.Errorf("cudaduel: unknown selection %d, expected auto (%d), block (%d), cluster (%d), rounds (%d), rounds8 (%d) or lean (%d)", opt.Selection, SelectAuto, SelectBlock, SelectCluster, SelectRounds, SelectRounds8, SelectLean)
	case opt.Move < MoveAuto || opt.Move > MoveGather:
		return nil, fmt.Errorf("cudaduel: unknown move %d, expected auto (%d), scatter (%d) or gather (%d)", opt.Move, MoveAuto, MoveScatter, MoveGather)
	}
	block, err := checkBlock(opt.BlockSize)
	if err != nil {
		return nil, err
	}
	m := &Memory{g: g, k: k, z: z, adm: opt.Admission, block: block, cblock: block, lblock: block, shared: defaultShared, sel: opt.Selection, prefetch: opt.Prefetch, move: opt.Move}
	if m.move == MoveAuto {
		if m.move, err = envMove(); err != nil {
			return nil, err
		}
	}
	switch v := os.Getenv(EnvPrefetch); v {
	case "", "0":
	case "1":
		m.prefetch = true
	default:
		return nil, fmt.Errorf("cudaduel: %s=%q, expected 0 or 1", EnvPrefetch, v)
	}
	if m.sel == SelectAuto {
		switch v := os.Getenv(EnvSelect); v {
		case "", "auto":
		case "block":
			m.sel = SelectBlock
		case "cluster":
			m.sel = SelectCluster
		case "rounds":
			m.sel = SelectRounds
		case "rounds8":
			m.sel = SelectRounds8
		case "lean":
			m.sel = SelectLean
		default:
			return nil, fmt.Errorf("cudaduel: %s=%q, expected auto, block, cluster, rounds, rounds8 or lean", EnvSelect, v)
		}
	}
	if m.sel == SelectCluster {
		m.cshared = defaultShared
	}
	if m.sel == SelectRounds {
		m.rshared = defaultShared
	}
	if m.sel == SelectRounds8 {
		m.r8shared = defaultShared
	}
	if m.sel == SelectLean {
		m.lshared = leanSharedLimit(g)
	}
	if s, ok := g.(cuda.SharedMemoryOptIn); ok {
		if n, err := s.MaxSharedOptIn(); err == nil && n-staticShared > m.shared {
			if err := s.OptInShared(kc.DuelModule, "duel_select_shared", n-staticShared); err == nil {
				m.shared = n - staticShared
			}
			if m.cshared > 0 {
				if err := s.OptInShared(kc.DuelClusterModule, "duel_select_cluster", n-staticShared); err == nil {
					m.cshared = n - staticShared
				}
			}
			if m.rshared > 0 {
				if err := s.OptInShared(kc.DuelRoundsModule, "duel_select_rounds", n-staticShared); err == nil {
					m.rshared = n - staticShared
				}
			}
			if m.r8shared > 0 {
				if err := s.OptInShared(kc.DuelRounds8Module, "duel_select_rounds8", n-staticShared); err == nil {
					m.r8shared = n - staticShared
				}
			}
		}
	}
	bcap := opt.Batch
	if bcap == 0 {
		bcap = min(256, k, duelMaxRows-k)
	}
	if m.block == 0 {
		m.block = autoBlock(k + bcap)
	}
	if err := m.alloc(bcap); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// alloc (re)allocates the buffers for batches of up to bcap rows; the
// memory's contents are lost.
func (m *Memory) alloc(bcap int) error {
	m.free()
	m.bcap, m.w = bcap, m.k+bcap
	rows := m.k + bcap
	bufs := []struct {
		p *driver.DevicePtr
		n int
	}{
		{&m.grid, 4 * rows * m.z}, {&m.sim, 4 * (rows*m.w + leanTail)},
		{&m.score[0], 8 * m.k}, {&m.score[1], 8 * m.k}, {&m.slots, 4 * (3*m.k + max(bcap, 1))},
		{&m.gsc, 8 * rows}, {&m.psum, 8 * max(bcap, 1)}, {&m.ev, 4 * max(bcap, 1)}, {&m.rstat, 8 * roundStatsLen},
	}
	for _, a := range bufs {
		p, err := m.g.Alloc(a.n)
		if err != nil {
			return fmt.Errorf("cudaduel: memory of %d rows of %d (batches up to %d): %d bytes: %w", m.k, m.z, bcap, a.n, err)
		}
		*a.p = p
	}
	if r, ok := m.g.(readbacker); ok { // without pinned memory, CopyFromDevice
		if rb, err := r.NewReadback(4 * max(bcap, 1)); err == nil {
			m.rb = rb
		}
	}
	// sim zeroed: duel_lean.cu's threads read up to a block's width past
	// K+B in a row (into the next row, or the tail), and must find finite
	// integer dots there.
	if err := m.g.Zero(m.sim, 4*(rows*m.w+leanTail)); err != nil {
		return fmt.Errorf("cudaduel: zeroing the similarity matrix: %w", err)
	}
	return m.allocTwin()
}

// free releases the device buffers.
func (m *Memory) free() {
	if m.rb != nil {
		m.rb.Close()
		m.rb = nil
	}
	m.dropMoveTimer()
	for _, p := range []*driver.DevicePtr{&m.grid, &m.sim, &m.sim2, &m.score[0], &m.score[1], &m.slots, &m.gsc, &m.psum, &m.ev, &m.rstat} {
		if *p != 0 {
			m.g.Free(*p)
			*p = 0
		}
	}
	m.loaded = false
}

// Close frees the device memory. The Memory is unusable afterwards;
// closing it again does nothing.
func (m *Memory) Close() error {
	if m == nil || m.closed {
		return nil
	}
	m.free()
	m.closed = true
	return nil
}

// K returns the number of rows held.
func (m *Memory) K() int { return m.k }

// usable reports why the memory cannot run (closed, or not loaded).
func (m *Memory) usable(needLoaded bool) error {
	switch {
	case m.closed:
		return fmt.Errorf("cudaduel: memory used after Close")
	case needLoaded && !m.loaded:
		return fmt.Errorf("cudaduel: memory updated before Load")
	}
	return nil
}

// elementwise is a grid-stride launch over n elements.
func elementwise(n int64) kc.Config {
	const threads = 256
	return kc.Config{Grid: driver.Dim3{X: int(min((n+threads-1)/threads, 1<<16)), Y: 1, Z: 1},
		Block: driver.Dim3{X: threads, Y: 1, Z: 1}}
}

// toGrid rounds the n values at p to the grid, in place.
func (m *Memory) toGrid(p driver.DevicePtr, n int) error {
	return kc.DuelGrid(m.g, elementwise(int64(n)), p, int64(n), p)
}

// dots writes sim[r*w + c] = grid(r).grid(c) for rows r0..r0+nr-1 and
// columns c0..c0+nc-1: sgemm_f32's exact float dots, made int32 in place
// (duel_int_block: sim holds the dots as integers).
func (m *Memory) dots(r0, nr, c0, nc int) error {
	if nr == 0 || nc == 0 {
		return nil
	}
	if (nr+63)/64 > 65535 {
		return fmt.Errorf("cudaduel: %d rows exceed one sgemm_f32 launch (%d)", nr, 65535*64)
	}
	cfg := kc.Config{Grid: driver.Dim3{X: (nc + 63) / 64, Y: (nr + 63) / 64, Z: 1}, Block: driver.Dim3{X: 256, Y: 1, Z: 1}}
	g, z := m.grid, int64(m.z)
	block := m.sim + driver.DevicePtr(4*(int64(r0)*int64(m.w)+int64(c0)))
	if err := kc.SgemmF32(m.g, cfg, 0, 1, int32(nr), int32(nc), int32(m.z), 1,
		g+driver.DevicePtr(4*int64(r0)*z), z, 0, g+driver.DevicePtr(4*int64(c0)*z), z, 0,
		0, block, int64(m.w), 0, 1); err != nil {
		return err
	}
	// At most 1024 blocks, grid-stride (the CPU emulator pays for blocks,
	// a GPU's threads take 64 dots each at K 4096).
	cv := elementwise(int64(nr) * int64(nc))
	cv.Grid.X = min(cv.Grid.X, 1024)
	return kc.DuelIntBlock(m.g, cv, block, int64(m.w), int32(nr), int32(nc))
}

// Load replaces the rows held by rows (K x Z, L2-normalised, oldest
// first): it uploads them, and computes their K x K grid dots and, when
// scores is nil, their scores (scores, when given, are those a previous
// update returned for exactly these rows, see Result.Scores).
func (m *Memory) Load(rows []float32, scores []float64) error {
	if err := m.usable(false); err != nil {
		return err
	}
	if len(rows) != m.k*m.z {
		return fmt.Errorf("cudaduel: memory of %d values, expected %d rows of %d", len(rows), m.k, m.z)
	}
	if scores != nil && len(scores) != m.k {
		return fmt.Errorf("cudaduel: %d carried scores for %d rows held", len(scores), m.k)
	}
	if err := checkRows("memory", rows, m.z); err != nil {
		return err
	}
	if err := checkScores(scores, m.k); err != nil {
		return err
	}
	m.loaded = false
	c := m.cur
	if err := m.g.CopyToDevice(m.grid, cuda.Bytes(rows)); err != nil {
		return err
	}
	if err := m.toGrid(m.grid, m.k*m.z); err != nil {
		return err
	}
	if err := m.identitySlots(); err != nil {
		return err
	}
	if err := m.dots(0, m.k, 0, m.k); err != nil {
		return err
	}
	if scores != nil {
		if err := m.g.CopyToDevice(m.score[c], cuda.Bytes(scores)); err != nil {
			return err
		}
	} else {
		warps := int64(m.k)
		cfg := kc.Config{Grid: driver.Dim3{X: int(min((warps+7)/8, 1<<16)), Y: 1, Z: 1}, Block: driver.Dim3{X: 256, Y: 1, Z: 1}}
		if err := kc.DuelScores(m.g, cfg, m.sim, int64(m.w), int32(m.k), m.score[c]); err != nil {
			return err
		}
	}
	m.loaded = true
	return nil
}

// identitySlots makes slot p hold position p (rank and slot tables of
// duel.cu's kept).
func (m *Memory) identitySlots() error {
	id := make([]int32, 2*m.k)
	for p := range m.k {
		id[p], id[m.k+p] = int32(p), int32(p)
	}
	return m.g.CopyToDevice(m.slots, cuda.Bytes(id))
}

// slotTable returns the slot of each position (duel.cu's kept slot table).
func (m *Memory) slotTable() ([]int32, error) {
	slot := make([]int32, m.k)
	if err := m.g.CopyFromDevice(cuda.Bytes(slot), m.slots+driver.DevicePtr(4*int64(m.k))); err != nil {
		return nil, err
	}
	return slot, nil
}

// grow reallocates the buffers for batches of b rows, keeping the memory:
// its grid rows and scores move to the new buffers in position order
// (slot p holding position p) and its block is recomputed.
func (m *Memory) grow(b int) error {
	k, z := m.k, m.z
	grid := make([]float32, k*z) // grid values are exact floats: a round trip keeps them
	if err := m.g.CopyFromDevice(cuda.Bytes(grid), m.grid); err != nil {
		return err
	}
	scores, err := m.Scores()
	if err != nil {
		return err
	}
	slot, err := m.slotTable()
	if err != nil {
		return err
	}
	rows := make([]float32, 0, k*z)
	for _, s := range slot {
		rows = append(rows, grid[int(s)*z:(int(s)+1)*z]...)
	}
	if err := m.alloc(b); err != nil {
		return err
	}
	m.cur = 0
	if err := m.g.CopyToDevice(m.grid, cuda.Bytes(rows)); err != nil {
		return err
	}
	if err := m.g.CopyToDevice(m.score[0], cuda.Bytes(scores)); err != nil {
		return err
	}
	if err := m.identitySlots(); err != nil {
		return err
	}
	if err := m.dots(0, k, 0, k); err != nil {
		return err
	}
	m.loaded = true
	return nil
}

// Update runs the DUEL policy on one batch (B x Z host rows,
// L2-normalised, in arrival order) and leaves the memory holding the kept
// rows, in order. The result's Evicted and Kept follow memory.Policy's
// contract (positions 0..K-1 the rows held, K+b batch row b); its Scores
// are nil (see Scores). No device memory is allocated unless B exceeds
// every batch before it. Update returns once the selection is done; the
// rows' move into the freed slots runs on after it, ordered before
// everything queued later, so that a fault of that move is reported by the
// memory's next call that waits for the device.
func (m *Memory) Update(batch []float32) (Result, error) {
	if err := m.usable(true); err != nil {
		return Result{}, err
	}
	k, z := m.k, m.z
	if len(batch)%z != 0 {
		return Result{}, fmt.Errorf("cudaduel: batch of %d values, expected a multiple of the row length %d", len(batch), z)
	}
	b := len(batch) / z
	if b > duelMaxRows-k {
		return Result{}, fmt.Errorf("cudaduel: %d rows held plus %d incoming exceed %d", k, b, duelMaxRows)
	}
	// The batch's values are checked (checkRows) before anything is
	// queued: in a run of updates the device is then still moving the
	// previous update's rows (duel_move, tens of microseconds at K 4096),
	// which hides the check, and nothing the host does stands between the
	// dots and the selection on the device.
	res := Result{Evicted: make([]int, b), Kept: make([]int, k)}
	if b == 0 {
		for p := range res.Kept {
			res.Kept[p] = p
		}
		return res, nil
	}
	if err := m.recordMove(); err != nil { // the previous update's, for MoveAuto
		return Result{}, err
	}
	m.mark()
	defer m.account()
	if err := checkRows("batch", batch, z); err != nil {
		return Result{}, err
	}
	m.mark()
	if b > m.bcap {
		if err := m.grow(b); err != nil {
			return Result{}, err
		}
	}
	c, n := m.cur, 1-m.cur
	gridB := m.grid + driver.DevicePtr(4*int64(k)*int64(z))
	if err := m.g.CopyToDevice(gridB, cuda.Bytes(batch)); err != nil {
		return Result{}, err
	}
	if err := m.toGrid(gridB, b*z); err != nil {
		return Result{}, err
	}
	m.mark()
	// One launch: the batch's rows of sim (dots with the memory and the
	// batch), its columns over the memory's rows (row J of sim is then
	// complete for every slot J), and each batch row's dots with the rows
	// before it, added into the zeroed sums.
	if !packedFits(k, b) { // unreachable: NewMemory and Update bound K+B
		return Result{}, fmt.Errorf("cudaduel: %d rows held plus %d incoming exceed the selection's keys", k, b)
	}
	if err := m.g.Zero(m.psum, 8*b); err != nil {
		return Result{}, err
	}
	dots := kc.Config{Grid: driver.Dim3{X: (k + b + 63) / 64, Y: (b + 63) / 64, Z: 1}, Block: driver.Dim3{X: 256, Y: 1, Z: 1}}
	if err := kc.DuelDots(m.g, dots, m.grid, int32(z), int32(k), int32(b), m.sim, int64(m.w), m.psum); err != nil {
		return Result{}, err
	}
	m.mark()
	protect, flags := int32(0), int32(0) // flags: duel.cu's SELECT_PROTECT | SELECT_PREFETCH
	if m.adm == memory.Protected {
		protect, flags = 1, selectProtect
	}
	if m.prefetch {
		flags |= selectPrefetch
	}
	one := kc.Config{Grid: driver.Dim3{X: 1, Y: 1, Z: 1}, Block: driver.Dim3{X: m.block, Y: 1, Z: 1}}
	var err error
	launched := false
	turn := m.autoLeanTurn(k, b) // SelectAuto's measurement (autotune.go)
	timer := m.startSelectTimer(turn, b)
	var leanOut *leanOutputs
	if sh := clusterShared(k, b, z); sh <= m.cshared {
		bs := m.cblock
		if bs == 0 {
			bs = clusterBlock(k, b)
		}
		cfg := kc.Config{Grid: driver.Dim3{X: clusterSize, Y: 1, Z: 1}, Block: driver.Dim3{X: bs, Y: 1, Z: 1}, Shared: sh}
		launched = m.optional("duel_select_cluster", &m.cshared, &m.clusterErr, kc.DuelSelectCluster(m.g, cfg, m.sim, int64(m.w), m.grid,
			int32(z), int32(k), int32(b), protect, m.score[c], m.psum, m.gsc, m.ev, m.slots, m.score[n]))
	}
	capC := roundsCap(k, b, m.rshared)
	if m.rcap > 0 && capC > 0 {
		capC = m.rcap
	}
	if !launched && capC > 0 {
		one.Shared = roundsShared(k, b, capC)
		launched = m.optional("duel_select_rounds", &m.rshared, &m.roundsErr, kc.DuelSelectRounds(m.g, one, m.sim, int64(m.w),
			int32(k), int32(b), flags&selectProtect, int32(capC), m.score[c], m.psum, m.ev, m.slots, m.score[n], m.rstat))
	}
	capQ := rounds8Cap(k, b, m.r8shared)
	if m.rcap > 0 && capQ > 0 {
		capQ = min(m.rcap, 16)
	}
	if !launched && m.lshared > 0 {
		m.ranPf = m.prefetch
		switch {
		case m.sel == SelectLean || turn == leanRun:
			launched = m.runLean(k, b, flags, c, n)
		case turn == leanRunPrefetch: // SelectAuto's: the prefetch for the lean kernel alone
			launched = m.runLean(k, b, flags|selectPrefetch, c, n)
			m.ranPf = true
		case turn == leanCheck: // the lean kernel first (with the prefetch: every path), then the one-block kernel on the same inputs
			if leanOut, err = m.leanFirst(k, b, flags|selectPrefetch, c, n); err != nil {
				return Result{}, err
			}
		}
	}
	if !launched && capQ > 0 {
		cfg := kc.Config{Grid: driver.Dim3{X: clusterSize, Y: 1, Z: 1}, Block: driver.Dim3{X: max(m.block, rounds8MinBlock), Y: 1, Z: 1},
			Shared: rounds8Shared(k, b, capQ)}
		launched = m.optional("duel_select_rounds8", &m.r8shared, &m.rounds8Err, kc.DuelSelectRounds8(m.g, cfg, m.sim, int64(m.w),
			int32(k), int32(b), flags&selectProtect, int32(capQ), m.score[c], m.psum, m.gsc, m.ev, m.slots, m.score[n], m.rstat))
	}
	switch sh := selectShared(k, b); {
	case launched: // duel_select_cluster, duel_select_rounds, duel_select_rounds8 or a lean kernel ran the steps
	case sh <= m.shared:
		one.Shared = sh
		m.ran = "duel_select_shared"
		err = kc.DuelSelectShared(m.g, one, m.sim, int64(m.w), int32(k), int32(b), flags, m.score[c],
			m.psum, m.ev, m.slots, m.score[n])
	default:
		m.ran = "duel_select_global"
		err = kc.DuelSelectGlobal(m.g, one, m.sim, int64(m.w), int32(k), int32(b), flags, m.score[c],
			m.psum, m.gsc, m.ev, m.slots, m.score[n])
	}
	if err != nil {
		return Result{}, err
	}
	timer.stop(m.g)
	if leanOut != nil {
		if err := m.crossCheck(leanOut, m.ran, k, b, n); err != nil {
			return Result{}, err
		}
	}
	if m.check != nil {
		if err := m.check(m.ran); err != nil {
			return Result{}, err
		}
	}
	m.mark()
	// The evictions come back without the host waiting for the move: it
	// waits for the selection and their copy only, and builds the result
	// (and the caller its next batch) while the device moves the rows.
	// The next update's work queues behind the move on the stream, its
	// batch's copy included (staged by the device when large, so that the
	// host does not wait for the move there either). With a Readback the
	// move is queued before the host waits, so that the device goes from
	// the copy to the move without waiting for the host to wake up; else
	// after the copy's wait.
	m.ev32 = growInt32(m.ev32, b)
	move := func() error { // the download's phase ends, the move's is timed
		m.mark()
		if err := m.queueMove(k, z, b, m.moveTurn(b)); err != nil {
			return err
		}
		m.cur = n
		m.mark()
		return nil
	}
	if m.rb != nil {
		if err := m.rb.Start(m.ev, 4*b); err != nil {
			return Result{}, err
		}
		if err := move(); err != nil {
			return Result{}, err
		}
		got, err := m.rb.Wait()
		if err != nil {
			return Result{}, err
		}
		copy(cuda.Bytes(m.ev32), got)
	} else {
		if err := m.g.CopyFromDevice(cuda.Bytes(m.ev32), m.ev); err != nil {
			return Result{}, err
		}
		if err := move(); err != nil {
			return Result{}, err
		}
	}
	m.record(timer, m.ran)
	for i, v := range m.ev32 {
		res.Evicted[i] = int(v)
	}
	keptPositions(res.Kept, res.Evicted)
	m.updates++
	return res, nil
}

// readbacker is implemented by GPUs whose copies to the host can be
// waited for apart from the work queued after them (*cuda.Device).
type readbacker interface {
	NewReadback(n int) (*cuda.Readback, error)
}

// optional records the launch of an optional selection kernel (name,
// its launcher's error err) and reports whether it ran. A launch the
// driver refuses (a cluster it cannot place, no PTX for the device) turns
// the kernel off (*shared = 0) with the reason kept in *reason: the
// one-block kernels run this update and the later ones.
func (m *Memory) optional(name string, shared *int, reason *error, err error) bool {
	m.ran = name
	if err != nil {
		*reason = fmt.Errorf("cudaduel: %s refused, the one-block selection runs instead: %w", name, err)
		*shared = 0
		return false
	}
	return true
}

// keptPositions writes into kept (K values) the positions held after the
// evictions ev (memory.Policy's contract: positions 0..K-1 the rows held,
// K+b batch row b), in order: the positions not in ev, found as the zero
// bits of a bitmap of ev, a word at a time (a branch a position kept,
// always taken but at the end of a word, instead of a byte a position
// and a test of each).
func keptPositions(kept, ev []int) {
	k := len(kept)
	gone := make([]uint64, (k+len(ev)+63)/64)
	for _, p := range ev {
		gone[p>>6] |= 1 << (p & 63)
	}
	o := 0
	for w, g := range gone {
		for free := ^g; free != 0 && o < k; free &= free - 1 {
			kept[o] = w<<6 + bits.TrailingZeros64(free)
			o++
		}
	}
}

// Scores returns the scores of the rows held (the sum of each row's q with
// the rows held, itself included), in order.
func (m *Memory) Scores() ([]float64, error) {
	if err := m.usable(true); err != nil {
		return nil, err
	}
	bySlot := make([]float64, m.k)
	if err := m.g.CopyFromDevice(cuda.Bytes(bySlot), m.score[m.cur]); err != nil {
		return nil, err
	}
	slot, err := m.slotTable()
	if err != nil {
		return nil, err
	}
	s := make([]float64, m.k)
	for p, sl := range slot {
		if sl < 0 || int(sl) >= m.k {
			return nil, fmt.Errorf("cudaduel: position %d in slot %d of %d: corrupt slot table", p, sl, m.k)
		}
		s[p] = bySlot[sl]
	}
	return s, nil
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]int32, n)
}
