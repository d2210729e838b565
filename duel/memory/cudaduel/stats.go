package cudaduel

import "github.com/duel-ssl/duel/cuda"

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
