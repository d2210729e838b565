package cudaduel

import (
	"errors"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
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

// autoBlock is the selection kernel's block size when none is given, for
// n positions (K + batch capacity): the largest power of two up to n/4
// (about four positions a thread), within 256..1024: the fastest of the
// block sizes timed on an H100 at K 4096 + 256 (1024) and K 2048 + 256
// (512) (bench/RESULTS.md, "NVIDIA H100").
func autoBlock(n int) int {
	b := 256
	for b < 1024 && 2*b <= n/4 {
		b *= 2
	}
	return b
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
