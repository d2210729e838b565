package conv

import "github.com/duel-ssl/duel/internal/cpu"

// ChunkPositions returns how many output positions a chunk of WeightGrad
// should hold for in input channels: WeightGrad streams the chunk's input
// once per block of three output channels, so the input planes of the
// chunk (in*positions floats) should stay within half of the L2 cache
// (internal/cpu; 1 MiB when unknown). At least one vector.
func ChunkPositions(in int) int {
	l2 := cpu.Detect().L2
	if l2 <= 0 {
		l2 = 1 << 20
	}
	return max(Lanes, l2/2/4/max(in, 1))
}
