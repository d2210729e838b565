package cudaduel

import (
	"fmt"

	"github.com/duel-ssl/duel/duel/memory"
)

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
	// The decisions are the same either way. It slows duel_select_shared
	// on an H200 (bench/RESULTS.md, "NVIDIA H200"), and the lean kernels'
	// is not timed on a GPU yet, so SelectAuto measures the lean kernel
	// with and without it (and the one-block kernels without it) and runs
	// the fastest. Setting it here or by DUEL_CUDADUEL_PREFETCH=1 turns it
	// on for every kernel (BenchmarkDUELKernel's blockNprefetch,
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
	// (TestDUELKernel) but is slower there (BenchmarkDUELKernel/cluster;
	// bench/RESULTS.md, "NVIDIA H100"), so it is asked for with
	// SelectCluster or DUEL_CUDADUEL_SELECT=cluster only; so are the
	// certified rounds, far slower on an H200 ("NVIDIA H200").
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
	// falls back to them too. The same decisions (TestDUELRounds*); far
	// slower than the one-block kernels on an H200 (bench/RESULTS.md,
	// "NVIDIA H200"), so asked for only.
	SelectRounds
	// SelectRounds8 runs duel_select_rounds8 (kernels/cuda/duel_rounds8.cu:
	// duel_select_rounds' rounds on a cluster of eight blocks, each
	// choosing candidates among its slots and checking them, so that the
	// passes over every slot's rows of sim run on eight SMs; compute
	// capability 9.0 and later) whenever its shared memory fits, whatever
	// compute capability the GPU reports (the emulator's tests), else
	// SelectBlock's kernels; a launch the driver refuses falls back to
	// them too. The same decisions (TestDUELRounds8Emulated); far slower
	// than the one-block kernels on an H200 (bench/RESULTS.md, "NVIDIA
	// H200"), so asked for only.
	SelectRounds8
	// SelectLean runs duel_select_lean128, 512 or 1024
	// (kernels/cuda/duel_lean.cu: the one-block steps with each thread's
	// keys in registers and every slot's update the same: a step loop of
	// about a third of duel_select_shared's instructions a warp, and 4
	// branches (bench/duel_sass.py; bench/RESULTS.md, "The DUEL
	// selections' step loops in sm_90 SASS"); compute capability 8.0 and
	// later) with BlockSize threads (512 when it is 0 or not one of the
	// three), whenever K+B fits its threads' slots (2048, 8192, 6144) and
	// its shared memory fits, else SelectBlock's kernels; a launch the
	// driver refuses falls back to them too. The same decisions
	// (TestDUELLeanEmulated); not yet timed on a GPU: SelectAuto measures
	// it against SelectBlock's kernels on each memory.
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
