package cudaduel

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"time"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/duel/memory"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/kernels/vecmath"
)

// Options configures Update.
type Options struct {
	// Admission says whether a batch row may be evicted by a later row of
	// the same batch (see memory.Admission).
	Admission memory.Admission
	// Scores, when not nil, are the scores of the rows held (K values),
	// as returned in Result.Scores by the previous update of the same
	// memory: the update then skips summing the K x K similarities.
	Scores []float64
	// BlockSize is the number of threads of the selection kernel's one
	// block: a multiple of 32 up to 1024; 0 chooses from K and the batch
	// (about four positions a thread, 256 to 1024: the fastest measured on
	// an H100).
	BlockSize int
}

// Result is the outcome of one DUEL update.
type Result struct {
	// Evicted holds, for each batch row in arrival order, the position
	// that left when it arrived (memory.Policy's contract: 0..K-1 a row
	// held, K+b batch row b).
	Evicted []int
	// Kept holds the K positions held afterwards, in order: rows held,
	// then the batch rows that entered.
	Kept []int
	// Scores holds the score of each kept row (sum of its q with the rows
	// kept, itself included), to pass as Options.Scores next time.
	// Memory.Update leaves it nil (the scores stay on the device; see
	// Memory.Scores).
	Scores []float64
}

// The limits of the exact similarity grid (duel/memory's similarity.go):
// with rows of L2 norm at most duelMaxNorm2^(1/2) and Z <= duelMaxZ, a grid
// row's norm is below 2048*sqrt(2) + sqrt(Z)/2 < 3410, so every partial sum
// of a dot product is an integer below 3410^2 < 2^24 (exact in float32 and
// int32). Rows are meant to be unit rows; the bound leaves room for their
// rounding. duelMaxRows bounds K+B: the selection's packed keys hold
// positions and scores up to there (packedFits), and the similarity
// matrix of that many rows would take 256 GB.
const (
	duelMaxZ     = 1 << 20
	duelMaxRows  = 1 << 18
	duelMaxNorm2 = 2.0
)

// autoBlock is the selection kernel's block size when none is given, for
// n positions (K + batch capacity): the largest power of two up to n/4
// (about four positions a thread), within 256..1024. Measured on an H100
// (bench/RESULTS.md): K 4096 + 256 takes 1024 (0.84 ms an update, 1.00
// with 512), K 2048 + 256 takes 512 (0.72 ms, 0.84 with 1024).
func autoBlock(n int) int {
	b := 256
	for b < 1024 && 2*b <= n/4 {
		b *= 2
	}
	return b
}

// checkBlock returns the selection kernel's block size for n (0: chosen
// by autoBlock from the positions, then), or why it is not one.
func checkBlock(n int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	if n < 32 || n > 1024 || n%32 != 0 {
		return 0, fmt.Errorf("cudaduel: block size %d, expected a multiple of 32 in 32..1024", n)
	}
	return n, nil
}

// checkRows reports the first value of rows (z columns) that is not a
// unit row's component, or the first row whose squared norm exceeds
// duelMaxNorm2 (the grid's dots would no longer be exact). Each row is
// first checked by rowFits; only a row it cannot pass is checked again by
// the exact checkRow, which finds what to report.
func checkRows(name string, rows []float32, z int) error {
	for r := 0; r*z < len(rows); r++ {
		if row := rows[r*z : (r+1)*z]; !rowFits(row) {
			if err := checkRow(name, r, row); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRow is the exact check of row r of name: its first value that is
// not a unit row's component, or its squared norm beyond duelMaxNorm2.
func checkRow(name string, r int, row []float32) error {
	var ss float64
	for c, v := range row {
		if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 1 {
			return fmt.Errorf("cudaduel: %s row %d column %d is %v, expected a unit row's component in [-1, 1]", name, r, c, v)
		}
		ss += float64(v) * float64(v)
	}
	if ss > duelMaxNorm2 {
		return fmt.Errorf("cudaduel: %s row %d has squared L2 norm %.6g, expected an L2-normalised row (at most %g)", name, r, ss, duelMaxNorm2)
	}
	return nil
}

// rowFits reports whether every value of row is in [-1, 1] (not NaN) and
// its squared norm is below duelMaxNorm2 by more than any rounding of the
// sum could move it: then checkRow would pass it too. The squares are
// summed by vecmath.UnitSquares (16 float64 lanes, AVX2 where the CPU has
// it, the bound test on every value's bits without a branch): a batch of
// 256 x 128 is checked on every update, before its selection can start.
func rowFits(row []float32) bool {
	ss, ok := vecmath.UnitSquares(row)
	return ok && ss <= duelMaxNorm2*(1-1e-9)
}

// checkDUEL validates the arguments of Update and returns K, B and the
// block size.
func checkDUEL(mem, batch []float32, z int, opt Options) (k, b, block int, err error) {
	switch {
	case z < 1 || z > duelMaxZ:
		return 0, 0, 0, fmt.Errorf("cudaduel: row length %d, expected 1..%d", z, duelMaxZ)
	case len(mem)%z != 0 || len(mem) == 0:
		return 0, 0, 0, fmt.Errorf("cudaduel: memory of %d values, expected a positive multiple of the row length %d", len(mem), z)
	case len(batch)%z != 0:
		return 0, 0, 0, fmt.Errorf("cudaduel: batch of %d values, expected a multiple of the row length %d", len(batch), z)
	case opt.Admission != memory.Protected && opt.Admission != memory.Compete:
		return 0, 0, 0, fmt.Errorf("cudaduel: unknown admission mode %d, expected protected (%d) or compete (%d)", opt.Admission, memory.Protected, memory.Compete)
	}
	k, b = len(mem)/z, len(batch)/z
	if k+b > duelMaxRows {
		return 0, 0, 0, fmt.Errorf("cudaduel: %d rows held plus %d incoming exceed %d", k, b, duelMaxRows)
	}
	if opt.Scores != nil && len(opt.Scores) != k {
		return 0, 0, 0, fmt.Errorf("cudaduel: %d carried scores for %d rows held", len(opt.Scores), k)
	}
	if err := checkScores(opt.Scores, k); err != nil {
		return 0, 0, 0, err
	}
	if block, err = checkBlock(opt.BlockSize); err != nil {
		return 0, 0, 0, err
	}
	if block == 0 {
		block = autoBlock(k + b)
	}
	if err := checkRows("memory", mem, z); err != nil {
		return 0, 0, 0, err
	}
	if err := checkRows("batch", batch, z); err != nil {
		return 0, 0, 0, err
	}
	return k, b, block, nil
}

// Update runs one update of the DUEL policy on g: mem holds the K rows of
// a full memory (K x z, L2-normalised, oldest first) and batch the B
// incoming rows. Its decisions are exactly those of memory.DUEL with the
// same admission (the tests check it): scores are exact on duel/memory's
// similarity grid. It uploads the memory and allocates a Memory for the
// one update; a stream of updates of the same memory should keep a Memory
// instead, which copies only the batches.
func Update(g cuda.GPU, mem, batch []float32, z int, opt Options) (Result, error) {
	k, b, _, err := checkDUEL(mem, batch, z, opt)
	if err != nil {
		return Result{}, err
	}
	if noGPU(g) {
		return Result{}, errNoDevice
	}
	m, err := NewMemory(g, k, z, MemoryOptions{Admission: opt.Admission, BlockSize: opt.BlockSize, Batch: b})
	if err != nil {
		return Result{}, err
	}
	defer m.Close()
	if err := m.Load(mem, opt.Scores); err != nil {
		return Result{}, err
	}
	res, err := m.Update(batch)
	if err != nil {
		return Result{}, err
	}
	if res.Scores, err = m.Scores(); err != nil {
		return Result{}, err
	}
	return res, nil
}

// errNoDevice is the error of a nil GPU.
var errNoDevice = errors.New("cudaduel: no device (nil cuda.GPU)")

// noGPU reports whether g is nil or holds a nil *cuda.Device.
func noGPU(g cuda.GPU) bool {
	d, ok := g.(*cuda.Device)
	return g == nil || ok && d == nil
}

// MemoryOptions configures a Memory.
type MemoryOptions struct {
	// Admission says whether a batch row may be evicted by a later row of
	// the same batch: memory.Protected or memory.Compete.
	Admission memory.Admission
	// BlockSize is the number of threads of the selection kernel's one
	// block: a multiple of 32 up to 1024; 0 chooses from K and the batch
	// (about four positions a thread, 256 to 1024: the fastest measured on
	// an H100).
	BlockSize int
	// Batch is the batch size to allocate for (0: 256, or K when smaller);
	// a larger batch reallocates the memory's device buffers once.
	Batch int
	// Selection chooses the selection kernel: SelectAuto (the zero value)
	// runs the one-block kernels or duel_lean.cu's, whichever it measures
	// faster on the memory's own updates (see SelectAuto); the others
	// force one family (tests, benchmarks).
	Selection Selection
	// Prefetch makes the one-block kernels end each step by asking L2 for
	// the rows of sim of the next candidates after the victim (duel.cuh's
	// prefetchRunnersUp: the likely victims of the step after next, read
	// from DRAM otherwise when sim exceeds L2), and the lean kernels
	// (SelectLean) ask for them while each step's row J is on its way.
	// The decisions are the same either way. On an H200 it slowed
	// duel_select_shared (0.628 against 0.515 ms of selection); the lean
	// kernels' is not yet timed, so off unless set here or by
	// DUEL_CUDADUEL_PREFETCH=1 (BenchmarkDUELKernel's blockNprefetch,
	// lean512prefetch).
	Prefetch bool
	// Move chooses how an update's batch rows kept take the slots freed:
	// MoveAuto (the zero value, unless DUEL_CUDADUEL_MOVE says otherwise)
	// measures the two ways on the memory's own updates; the same rows and
	// values either way.
	Move Move
}

// selectProtect and selectPrefetch are the bits of the one-block
// selection kernels' flags (duel.cu's SELECT_PROTECT, SELECT_PREFETCH).
const (
	selectProtect  = 1
	selectPrefetch = 2
)

// EnvPrefetch names the environment variable that turns
// MemoryOptions.Prefetch on ("1") for memories whose options leave it off.
const EnvPrefetch = "DUEL_CUDADUEL_PREFETCH"

// EnvSelect names the environment variable that overrides SelectAuto
// (MemoryOptions.Selection's zero value): "block", "cluster", "rounds",
// "rounds8" or "lean" force one family, as SelectBlock, SelectCluster,
// SelectRounds, SelectRounds8 and SelectLean do; "auto" or unset leave
// SelectAuto to measure.
const EnvSelect = "DUEL_CUDADUEL_SELECT"

// Selection chooses the kernel that runs an update's B sequential steps.
type Selection int

const (
	// SelectAuto runs SelectBlock's kernels or SelectLean's, whichever
	// is faster on the GPU at hand, measured on the memory's own updates
	// (autotune.go): the first update runs SelectBlock's; the second
	// runs the lean kernel, then SelectBlock's on the same inputs, and
	// compares their outputs bit for bit (a lean kernel that differs, or
	// that the driver refuses, as below compute capability 8.0, is never
	// run again: AutoTune says why); the next updates alternate the two,
	// timed, until each has tuneSamples, and the faster by median runs
	// from then on. Memory.AutoTune reports the measurement.
	// duel_select_cluster (kernels/cuda/duel_cluster.cu: a cluster of
	// eight blocks holding the grid rows in shared memory, compute
	// capability 9.0 and later) makes the same decisions on an H100
	// (TestDUELKernel) but is slower there (BenchmarkDUELKernel/cluster,
	// bench/RESULTS.md: the selection 0.65 ms against the one-block
	// kernel's 0.52 at K 4096 + 256, 0.68 against 0.36 at K 2048 + 256),
	// so it is asked for with SelectCluster or DUEL_CUDADUEL_SELECT=cluster
	// only; so are the certified rounds, 7-19x slower on an H200.
	SelectAuto Selection = iota
	// SelectBlock runs the one-block kernels: duel_select_shared when the
	// keys fit in shared memory, else duel_select_global.
	SelectBlock
	// SelectCluster runs duel_select_cluster whenever its shared memory
	// fits, whatever compute capability the GPU reports (the emulator's
	// tests), else SelectBlock's kernels.
	SelectCluster
	// SelectRounds runs duel_select_rounds (kernels/cuda/duel_rounds.cu:
	// the steps in rounds replayed on the rows of highest score and
	// checked against every other row with the round's rows of sim read
	// at once; compute capability 8.0 and later) whenever its shared
	// memory fits, else SelectBlock's kernels; a launch the driver refuses
	// falls back to them too. The same decisions (TestDUELRounds*); not
	// yet timed on a GPU, so asked for only.
	SelectRounds
	// SelectRounds8 runs duel_select_rounds8 (kernels/cuda/duel_rounds8.cu:
	// duel_select_rounds' rounds on a cluster of eight blocks, each
	// choosing candidates among its slots and checking them, so that the
	// passes over every slot's rows of sim run on eight SMs; compute
	// capability 9.0 and later) whenever its shared memory fits, whatever
	// compute capability the GPU reports (the emulator's tests), else
	// SelectBlock's kernels; a launch the driver refuses falls back to
	// them too. The same decisions (TestDUELRounds8Emulated); not yet
	// timed on a GPU, so asked for only.
	SelectRounds8
	// SelectLean runs duel_select_lean128, 512 or 1024
	// (kernels/cuda/duel_lean.cu: the one-block steps with each thread's
	// keys in registers and every slot's update the same, a step loop of
	// 168 instructions a warp (and 4 branches) at 512 threads and K+B 4352,
	// bench/duel_sass.py, where
	// duel_select_shared's is 490, branchy, at twice the warps; compute
	// capability 8.0 and later) with BlockSize threads (512 when
	// it is 0 or not one of the three), whenever K+B fits its threads'
	// slots (2048, 8192, 6144) and its shared memory fits, else
	// SelectBlock's kernels; a launch the driver refuses falls back to
	// them too. The same decisions (TestDUELLeanEmulated); not yet timed
	// on a GPU: SelectAuto measures it against SelectBlock's kernels on
	// each memory.
	SelectLean
)

// String returns the selection's name: auto, block, cluster, rounds,
// rounds8 or lean.
func (s Selection) String() string {
	switch s {
	case SelectAuto:
		return "auto"
	case SelectBlock:
		return "block"
	case SelectCluster:
		return "cluster"
	case SelectRounds:
		return "rounds"
	case SelectRounds8:
		return "rounds8"
	case SelectLean:
		return "lean"
	}
	return fmt.Sprintf("Selection(%d)", int(s))
}

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
	move      Move       // MemoryOptions.Move, or EnvMove's
	mtune     *moveTune  // MoveAuto's measurement (nil before it starts)
	mtimer    *moveTimer // the last update's move, timed for MoveAuto (read by the next update)
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

// duelTiming accumulates the time of Update's phases (benchmarks; permute
// is duel_move, which replaced the compaction of the K x K block; check is
// the host checking the batch before anything is queued: on a GPU, the
// time the device waits for it beyond the previous update's move). On a
// *cuda.Device, whose launches do not wait for their kernels, a phase is
// timed by events recorded on the device's stream around it; on other
// GPUs (which finish the work before returning) by the wall clock.
type duelTiming struct {
	upload, dots, check, selection, permute, download time.Duration
	marks                                             []timeMark // the current update's phase boundaries
}

// timeMark is a phase boundary: a device event, or the wall time.
type timeMark struct {
	at time.Time
	ev *driver.Event
}

// mark records a phase boundary (no-op without timing).
func (m *Memory) mark() {
	if m.timing == nil {
		return
	}
	tm := timeMark{at: time.Now()}
	if d, ok := m.g.(*cuda.Device); ok {
		if ev, err := d.Record(); err == nil {
			tm.ev = ev
		}
	}
	m.timing.marks = append(m.timing.marks, tm)
}

// account adds the phases between the recorded boundaries to the timing,
// in order (check, upload, dots, selection, download, permute), and closes
// the events (no-op without timing).
func (m *Memory) account() {
	if m.timing == nil {
		return
	}
	t := m.timing
	phases := []*time.Duration{&t.check, &t.upload, &t.dots, &t.selection, &t.download, &t.permute}
	d, _ := m.g.(*cuda.Device)
	for i := 1; i < len(t.marks) && i <= len(phases); i++ {
		a, b := t.marks[i-1], t.marks[i]
		dt := b.at.Sub(a.at)
		if d != nil && a.ev != nil && b.ev != nil {
			if e, err := d.Elapsed(a.ev, b.ev); err == nil {
				dt = e
			}
		}
		*phases[i-1] += dt
	}
	for _, tm := range t.marks {
		if tm.ev != nil {
			tm.ev.Close()
		}
	}
	t.marks = t.marks[:0]
}

// The selection kernel's static shared memory is below 2 KiB; what is
// left of a block's shared memory for its dynamic part keeps a margin.
const (
	defaultShared = 48<<10 - 4<<10
	staticShared  = 4 << 10
)

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
		switch {
		case m.sel == SelectLean || turn == leanRun:
			launched = m.runLean(k, b, flags, c, n)
		case turn == leanCheck: // the lean kernel first, then the one-block kernel on the same inputs
			if leanOut, err = m.leanFirst(k, b, flags, c, n); err != nil {
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

// clusterSize is duel_select_cluster's cluster (CLUSTER in
// duel_cluster.cu, compiled in): its launch is one cluster of that many
// blocks. clusterCapability is the compute capability of clusters.
const (
	clusterSize       = 8
	clusterCapability = 90
)

// clusterSlots returns the slots each block of duel_select_cluster owns
// for k rows held and b incoming.
func clusterSlots(k, b int) int { return (k + b + clusterSize - 1) / clusterSize }

// clusterShared returns the dynamic shared memory of each block of
// duel_select_cluster for k rows held, b incoming and rows of z values
// (duel_cluster.cu's layout): per keys (rounded up to an even count), 2 x
// 32 warp and 2 x clusterSize block maxima with their slots (1 KiB), 2 x
// clusterSize split grid rows of zw = ceil(z/8)*4 words, and per grid rows
// of zw + 4 words. At K 4096, B 256, Z 128: 153.7 KiB.
func clusterShared(k, b, z int) int {
	per := clusterSlots(k, b)
	zw := (z + 7) / 8 * 4
	return 8*((per+1)/2*2) + 1024 + 4*2*clusterSize*zw + 4*per*(zw+4)
}

// clusterBlock returns duel_select_cluster's block size when none is
// given: a thread per slot of a block (whole warps, 64 to 1024), so that
// each thread's one slot has its incoming dot loaded a step ahead. Not yet
// measured on a GPU.
func clusterBlock(k, b int) int {
	return min(1024, max(64, (clusterSlots(k, b)+31)/32*32))
}

// roundsSteps is duel_rounds.cu's ROUND_STEPS: the steps a round replays
// at most.
const roundsSteps = 64

// roundsShared returns the dynamic shared memory of duel_select_rounds
// for k rows held, b incoming and at most capC candidates a round
// (duel_rounds.cu's layout): selectShared's keys and slot table (padded
// to 8 bytes), then the candidates' and steps' keys (8 bytes each), the
// candidates' slots and flags and the steps' slots (4 bytes each), and
// the dots: capC^2 + roundsSteps*capC + roundsSteps^2 ints. At K 4096,
// B 256 and capC 128: 161.9 KiB.
func roundsShared(k, b, capC int) int {
	return selectShared(k, b) + 4*(k&1) + roundsStateBytes(capC)
}

// roundsCap returns the candidates a round of duel_select_rounds may
// take within shared bytes of dynamic shared memory: 128, or 64 or 32
// when only that fits; 0 when none does (or shared is 0: the kernel is
// not to run).
func roundsCap(k, b, shared int) int {
	for _, c := range []int{128, 64, 32} {
		if shared > 0 && roundsShared(k, b, c) <= shared {
			return c
		}
	}
	return 0
}

// roundsStateBytes is the round's state in duel_rounds.cu's layout
// (rounds.cuh's roundsLayout) for capC candidates: the candidates' and
// steps' keys (8 bytes each), the candidates' slots and flags and the
// steps' slots (4 bytes each), and the dots: capC^2 + roundsSteps*capC +
// roundsSteps^2 ints.
func roundsStateBytes(capC int) int {
	n := capC + roundsSteps
	return 8*(n+roundsSteps) + 4*(2*n+roundsSteps) + 4*(capC*capC+roundsSteps*capC+roundsSteps*roundsSteps)
}

// rounds8MinBlock is duel_select_rounds8's least block size: a thread per
// candidate of the round (8 x 16) in block 0's compaction.
const rounds8MinBlock = 128

// rounds8Shared returns the dynamic shared memory of each block of
// duel_select_rounds8 for k rows held, b incoming and at most capQ
// candidates a block (duel_rounds8.cu's layout): the block's keys (8
// bytes a slot), the round's state for 8 capQ candidates, 2 x 8 + 4
// ints, 32 warp maxima and roundStatsLen + 2 int64s. At K 4096, B 256
// and capQ 16: 120.4 KiB.
func rounds8Shared(k, b, capQ int) int {
	return 8*clusterSlots(k, b) + roundsStateBytes(clusterSize*capQ) + 4*(2*clusterSize+4) + 8*32 + 8*(roundStatsLen+2)
}

// rounds8Cap returns the candidates a block of duel_select_rounds8 may
// take within shared bytes: 16 (128 a round), or 8 or 4 when only that
// fits; 0 when none does (or shared is 0: the kernel is not to run).
func rounds8Cap(k, b, shared int) int {
	for _, c := range []int{16, 8, 4} {
		if shared > 0 && rounds8Shared(k, b, c) <= shared {
			return c
		}
	}
	return 0
}

// selectShared returns the dynamic shared memory of duel_select_shared
// for k rows held and b incoming: k+b 8-byte keys, then the slot of each
// of the k positions.
func selectShared(k, b int) int { return 8*(k+b) + 4*k }

// posBits returns the bits of the largest position, k+b-1 (0 when k+b
// is 1): the width of the position field of duel.cu's packed keys.
func posBits(k, b int) int {
	n := 0
	for 1<<n < k+b {
		n++
	}
	return n
}

// packedFits reports whether the packed keys of duel.cu hold k rows held
// and b incoming: the biased integer scores, below 2*(k+2b)*2^24, shifted
// past the position field, must stay below the protection bit (bit 62).
// That holds exactly when k+b <= 2^18 (TestPackedFits).
func packedFits(k, b int) bool {
	return int64(k+2*b)<<25 <= int64(1)<<(62-posBits(k, b))
}

// checkScores reports why scores (carried scores of k rows held, nil
// allowed) cannot be those of an update: each must be k/2 + S*2^-23 for
// an integer S with |S| < k*2^24 (the dots are integers of magnitude
// below 2^24, see kernels/cuda/duel.cu), which the kernels convert to
// integers exactly.
func checkScores(scores []float64, k int) error {
	for j, s := range scores {
		v := (s - 0.5*float64(k)) * 0x1p23
		if !(math.Abs(v) < float64(int64(k)<<24)) || v != math.Trunc(v) || 0.5*float64(k)+v*0x1p-23 != s {
			return fmt.Errorf("cudaduel: carried score %d is %v, expected K/2 + S*2^-23 with S an integer below K*2^24 in magnitude (the scores of a previous update)", j, s)
		}
	}
	return nil
}

// roundStats is what duel_select_rounds (and duel_select_rounds8, block
// 0's clock) reports of an update (its stats, rounds.cuh's RSTAT_*): the rounds taken, the steps replayed and the
// margin probes, and thread 0's clock64 cycles in each phase (candidates,
// gather, replay, check) and in the whole kernel. On the emulator the
// "cycles" count clock64's calls.
type roundStats struct {
	rounds, replayed, probes                 int64
	candidates, gather, replay, check, total int64
}

// roundStatsLen is the int64s of duel_select_rounds' stats (RSTAT_N).
const roundStatsLen = 8

// roundStats returns the statistics of the last update that ran
// duel_select_rounds or duel_select_rounds8 (tests, benchmarks: it waits
// for the device).
func (m *Memory) roundStats() (roundStats, error) {
	n, err := m.selectionStats()
	return roundStats{n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]}, err
}

// selectionStats copies the statistics buffer the rounds and lean kernels
// write (rstat) to the host, waiting for the device.
func (m *Memory) selectionStats() ([roundStatsLen]int64, error) {
	var n [roundStatsLen]int64
	err := m.g.CopyFromDevice(cuda.Bytes(n[:]), m.rstat)
	return n, err
}

// SelectionKernel returns the name of the kernel that ran the last
// update's B sequential steps (duel_select_shared, duel_select_global,
// duel_select_cluster or duel_select_rounds; see Selection), or "" before
// the first update that had any.
func (m *Memory) SelectionKernel() string { return m.ran }

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
