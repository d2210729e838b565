package cudaduel

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/kernels/vecmath"
)

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
