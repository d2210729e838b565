package cudaduel

import (
	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// leanKernel is one of duel_lean.cu's kernels: its block size (compiled
// in) and the most slots a thread holds (K+B at most nt*slots).
type leanKernel struct {
	name      string
	nt, slots int
	launch    func(l kc.Launcher, cfg kc.Config, sim driver.DevicePtr, w int64, k, b, flags int32, scoreIn, p, evicted, kept, scoreOut, stats driver.DevicePtr) error
}

// leanKernels are duel_lean.cu's kernels, by block size.
var leanKernels = []leanKernel{
	{"duel_select_lean128", 128, 16, kc.DuelSelectLean128},
	{"duel_select_lean512", 512, 16, kc.DuelSelectLean512},
	{"duel_select_lean1024", 1024, 6, kc.DuelSelectLean1024},
}

// leanAutoBlock is the block size SelectLean runs when MemoryOptions
// leaves it to the memory (BlockSize 0) or asks for one duel_lean.cu has
// no kernel for: 512 threads, whose warps each hold twice the slots of
// 1024's for the same reduction (not yet timed on a GPU).
const leanAutoBlock = 512

// leanTail is the ints allocated past sim's last row: a thread of
// duel_lean.cu reads its C = ceil((K+B)/NT) slots of a row, up to NT-1
// columns past K+B, which past the last row's W columns lie in the tail
// (zeroed with sim: the kernels read only integer dots there).
const leanTail = 1024

// leanFor returns the lean kernel for k+b slots with blocks of block
// threads (leanAutoBlock when duel_lean.cu has none of that size), and
// false when k+b exceeds what its threads hold.
func leanFor(k, b, block int) (leanKernel, bool) {
	pick := func(nt int) (leanKernel, bool) {
		for _, l := range leanKernels {
			if l.nt == nt {
				return l, k+b >= 1 && k+b <= l.nt*l.slots
			}
		}
		return leanKernel{}, false
	}
	if l, ok := pick(block); ok || l.nt != 0 {
		return l, ok
	}
	return pick(leanAutoBlock)
}

// leanShared returns the dynamic shared memory of a lean kernel of nt
// threads for k rows held and b incoming: the keys (8(k+b) bytes), over
// which the steps stage each thread's dots of row J (4 x nt x
// ceil((k+b)/nt) bytes, when more), then the slot of each of the k
// positions.
func leanShared(k, b, nt int) int {
	stage := 4 * nt * ((k + b + nt - 1) / nt)
	return max(8*(k+b), stage) + 4*k
}

// leanSharedLimit returns the dynamic shared memory the lean kernels may
// use on g: all that a block may have, once each of them has opted in
// (g a cuda.SharedMemoryOptIn allowing more than the default), else
// defaultShared.
func leanSharedLimit(g cuda.GPU) int {
	s, ok := g.(cuda.SharedMemoryOptIn)
	if !ok {
		return defaultShared
	}
	n, err := s.MaxSharedOptIn()
	if err != nil || n-staticShared <= defaultShared {
		return defaultShared
	}
	for _, l := range leanKernels {
		if s.OptInShared(kc.DuelLeanModule, l.name, n-staticShared) != nil {
			return defaultShared
		}
	}
	return n - staticShared
}

// runLean launches the lean kernel for the update (SelectLean) and
// reports whether it ran: false when K+B exceeds its threads' slots or
// its shared memory exceeds what the memory may use (the one-block
// kernels run then), or when the driver refused it (likewise, and for
// the later updates, the reason kept in leanErr).
func (m *Memory) runLean(k, b int, flags int32, c, n int) bool {
	l, ok := leanFor(k, b, m.lblock)
	if !ok {
		return false
	}
	sh := leanShared(k, b, l.nt)
	if sh > m.lshared {
		return false
	}
	if m.leanTimed {
		flags |= selectStats
	}
	cfg := kc.Config{Grid: driver.Dim3{X: 1, Y: 1, Z: 1}, Block: driver.Dim3{X: l.nt, Y: 1, Z: 1}, Shared: sh}
	err := l.launch(m.g, cfg, m.sim, int64(m.w), int32(k), int32(b), flags, m.score[c], m.psum, m.ev, m.slots, m.score[n], m.rstat)
	return m.optional(l.name, &m.lshared, &m.leanErr, err)
}

// selectStats is duel.cuh's SELECT_STATS: the lean kernels write thread
// 0's clock64 cycles in each part of the update into their stats.
const selectStats = 4

// leanStats is what a lean kernel reports of an update with selectStats
// (duel_lean.cu's LSTAT_*): warp 0's clock64 cycles in the prologue (the
// slot table, the batch rows' Q, the starting keys, the first maximum)
// and, over the steps, in waiting for row J, in updating the keys and
// in the block maxima, then in the whole kernel; and the steps. On the
// emulator the "cycles" count clock64's calls.
type leanStats struct {
	prologue, wait, update, reduce, total, steps int64
}

// leanStats returns the statistics of the last update that ran a lean
// kernel with m.leanTimed set (benchmarks, tests: it waits for the
// device).
func (m *Memory) leanStats() (leanStats, error) {
	n, err := m.selectionStats()
	return leanStats{n[0], n[1], n[2], n[3], n[4], n[5]}, err
}
