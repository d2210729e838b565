package cuda

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/duel/memory"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// DUELOptions configures DUELUpdate.
type DUELOptions struct {
	// Admission says whether a batch row may be evicted by a later row of
	// the same batch (see memory.Admission).
	Admission memory.Admission
	// Scores, when not nil, are the scores of the rows held (K values),
	// as returned in DUELResult.Scores by the previous update of the same
	// memory: the kernel then skips the K x K similarities. nil computes
	// them (O(K*K*Z) on one block).
	Scores []float64
	// BlockSize is the number of threads of the kernel's one block: a
	// multiple of 32 up to 1024; 0 means 512.
	BlockSize int
}

// DUELResult is the outcome of one DUEL update.
type DUELResult struct {
	// Evicted holds, for each batch row in arrival order, the position
	// that left when it arrived (memory.Policy's contract: 0..K-1 a row
	// held, K+b batch row b).
	Evicted []int
	// Kept holds the K positions held afterwards, in order: rows held,
	// then the batch rows that entered.
	Kept []int
	// Scores holds the score of each kept row (sum of its q with the rows
	// kept, itself included), to pass as DUELOptions.Scores next time.
	Scores []float64
}

// The limits of the exact similarity grid (duel/memory's similarity.go).
const (
	duelMaxZ    = 1 << 20
	duelMaxRows = 1 << 28
)

// checkDUEL validates the arguments of DUELUpdate and returns K, B and the
// block size.
func checkDUEL(mem, batch []float32, z int, opt DUELOptions) (k, b, block int, err error) {
	switch {
	case z < 1 || z > duelMaxZ:
		return 0, 0, 0, fmt.Errorf("cuda: DUEL: row length %d, expected 1..%d", z, duelMaxZ)
	case len(mem)%z != 0 || len(mem) == 0:
		return 0, 0, 0, fmt.Errorf("cuda: DUEL: memory of %d values, expected a positive multiple of the row length %d", len(mem), z)
	case len(batch)%z != 0:
		return 0, 0, 0, fmt.Errorf("cuda: DUEL: batch of %d values, expected a multiple of the row length %d", len(batch), z)
	case opt.Admission != memory.Protected && opt.Admission != memory.Compete:
		return 0, 0, 0, fmt.Errorf("cuda: DUEL: unknown admission mode %d", opt.Admission)
	}
	k, b = len(mem)/z, len(batch)/z
	if k+b > duelMaxRows {
		return 0, 0, 0, fmt.Errorf("cuda: DUEL: %d rows held plus %d incoming exceed %d", k, b, duelMaxRows)
	}
	if opt.Scores != nil && len(opt.Scores) != k {
		return 0, 0, 0, fmt.Errorf("cuda: DUEL: %d carried scores for %d rows held", len(opt.Scores), k)
	}
	block = opt.BlockSize
	if block == 0 {
		block = 512
	}
	if block < 32 || block > 1024 || block%32 != 0 {
		return 0, 0, 0, fmt.Errorf("cuda: DUEL: block size %d, expected a multiple of 32 in 32..1024", opt.BlockSize)
	}
	for name, rows := range map[string][]float32{"memory": mem, "batch": batch} {
		for i, v := range rows {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 1 {
				return 0, 0, 0, fmt.Errorf("cuda: DUEL: %s row %d column %d is %v, expected a unit row's component in [-1, 1]", name, i/z, i%z, v)
			}
		}
	}
	return k, b, block, nil
}

// DUELUpdate runs one update of the DUEL policy on the device, in one
// launch of kernels/cuda's duel_update: mem holds the K rows of a full
// memory (K x z, L2-normalised, oldest first) and batch the B incoming rows.
// Its decisions are exactly those of memory.DUEL with the same admission
// (the tests check it): scores are exact on duel/memory's similarity grid.
func (d *Device) DUELUpdate(mem, batch []float32, z int, opt DUELOptions) (DUELResult, error) {
	if d == nil {
		if _, _, _, err := checkDUEL(mem, batch, z, opt); err != nil {
			return DUELResult{}, err
		}
		return DUELResult{}, fmt.Errorf("cuda: DUEL: no device")
	}
	return duelUpdate(d, mem, batch, z, opt)
}

// duelUpdate is DUELUpdate on any gpu.
func duelUpdate(g gpu, mem, batch []float32, z int, opt DUELOptions) (DUELResult, error) {
	k, b, block, err := checkDUEL(mem, batch, z, opt)
	if err != nil {
		return DUELResult{}, err
	}
	w := k + b
	s := &scratch{g: g}
	defer s.release()
	var memP, batchP, grid, dots, score, flags, evicted, kept driver.DevicePtr
	for _, a := range []struct {
		p *driver.DevicePtr
		n int
	}{
		{&memP, 4 * k * z}, {&batchP, 4 * b * z}, {&grid, 4 * w * z}, {&dots, 4 * b * w},
		{&score, 8 * w}, {&flags, w}, {&evicted, 4 * b}, {&kept, 4 * k},
	} {
		if *a.p, err = s.alloc(a.n); err != nil {
			return DUELResult{}, fmt.Errorf("cuda: DUEL scratch: %w", err)
		}
	}
	if err := g.htod(memP, bytesOf(mem)); err != nil {
		return DUELResult{}, err
	}
	if err := g.htod(batchP, bytesOf(batch)); err != nil {
		return DUELResult{}, err
	}
	have := int32(0)
	if opt.Scores != nil {
		have = 1
		if err := g.htod(score, bytesOf(opt.Scores)); err != nil {
			return DUELResult{}, err
		}
	}
	protect := int32(0)
	if opt.Admission == memory.Protected {
		protect = 1
	}
	cfg := kc.Config{Grid: driver.Dim3{X: 1, Y: 1, Z: 1}, Block: driver.Dim3{X: block, Y: 1, Z: 1}}
	if err := kc.DuelUpdate(g, cfg, memP, batchP, int32(k), int32(b), int32(z), protect, have,
		grid, dots, score, flags, evicted, kept); err != nil {
		return DUELResult{}, err
	}
	ev32, kept32 := make([]int32, b), make([]int32, k)
	res := DUELResult{Scores: make([]float64, k)}
	for _, c := range []error{
		g.dtoh(bytesOf(ev32), evicted),
		g.dtoh(bytesOf(kept32), kept),
		g.dtoh(bytesOf(res.Scores), score),
	} {
		if c != nil {
			return DUELResult{}, c
		}
	}
	res.Evicted, res.Kept = widen(ev32), widen(kept32)
	return res, nil
}

func widen(v []int32) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
