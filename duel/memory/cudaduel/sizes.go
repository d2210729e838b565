package cudaduel

// The selection kernel's static shared memory is below 2 KiB; what is
// left of a block's shared memory for its dynamic part keeps a margin.
const (
	defaultShared = 48<<10 - 4<<10
	staticShared  = 4 << 10
)

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
// each thread's one slot has its incoming dot loaded a step ahead; faster
// than a block of 1024 on an H100 and an H200 (bench/RESULTS.md, "CUDA").
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
