package memory

import (
	"fmt"
	"math"
	"sync"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// The similarity grid.
//
// A component x of a unit row is stored for similarity purposes as the
// integer X = round(gridScale*x), |X| <= 2048 (exact in float16, int16 and
// float32). For two such rows, every product X_i*Y_i is an integer of at most
// 2^22 and, by Cauchy-Schwarz, every partial sum of the dot product is at most
// |X|*|Y| <= (2048 + sqrt(Z)/2)^2 < 2^24 in magnitude. Integers below 2^24
// are exact in float32, so an SGEMM over grid rows returns the exact integer
// dot product d, in any summation order. Then
//
//	q = (1 + d/2^22)/2 = 1/2 + d*2^-23
//
// is a multiple of 2^-23 of magnitude at most ~1, and a float64 sum of up to
// 2^29 such values is exact: scores do not depend on summation order.
const (
	gridScale = 2048    // components are rounded to multiples of 1/gridScale
	qUnit     = 0x1p-23 // q = 1/2 + d*qUnit for a grid dot product d
	maxZ      = 1 << 20 // keeps (2048 + sqrt(Z)/2)^2 far below 2^24
	maxRows   = 1 << 28 // keeps float64 score sums exact
)

// toGrid writes the grid version of the unit rows src into dst (same
// length): each component x becomes floor(2048*x + 1/2), the nearest
// integer (halves rounded up). x*2048 is exact, and so is the rounding.
func toGrid(dst, src []float32) {
	for i, x := range src {
		dst[i] = float32(gridOf(x))
	}
}

// gridOf returns floor(2048*x + 1/2) for a component x of a unit row
// (|x| <= 1 up to rounding): the sum is exact in float64 and above -4096,
// so truncating it plus 4096 toward zero floors it, without math.Floor's
// call.
func gridOf(x float32) int32 {
	return int32(float64(x)*gridScale+0.5+4096) - 4096
}

// qOf returns the mutual duplication probability q = (1 + cos)/2 of two rows
// whose grid dot product is d. The result is exact (see the grid above).
func qOf(d float32) float64 {
	return 0.5 + float64(d)*qUnit
}

// gridDots computes c = a * b^T for grid rows a (m x z) and b (n x z): the
// exact integer dot products, m x n, row-major.
func gridDots(c, a, b []float32, m, n, z int) {
	if m == 0 || n == 0 {
		return
	}
	gemm.Sgemm(false, true, m, n, z, 1, a, z, b, z, 0, c, n)
}

// normalizeRows copies the rows of src (z columns) into dst, each divided by
// its L2 norm, and reports the first row that is zero or not finite. Rows
// are shared out among the cores when they are many (see parallelValues)
// and taken eight at a time (normalize8, AVX-512 where it runs); each
// row's arithmetic is that of normalizeRow whatever the split.
func normalizeRows(dst, src []float32, z int) error {
	n := len(src) / z
	var mu sync.Mutex
	bad, badErr := n, error(nil)
	parallelValues(n, z, func(r0, r1 int) {
		r := r0
		for ; r+normRows <= r1 && normalize8(dst[r*z:(r+normRows)*z], src[r*z:(r+normRows)*z], z); r += normRows {
		}
		for ; r < r1; r++ { // the rest, or a bad row among eight
			if err := normalizeRow(dst[r*z:(r+1)*z], src[r*z:(r+1)*z]); err != nil {
				mu.Lock()
				if r < bad {
					bad, badErr = r, fmt.Errorf("row %d: %w", r, err)
				}
				mu.Unlock()
				return
			}
		}
	})
	return badErr
}

// normalizeRow writes row divided by its L2 norm into out, or reports why
// it cannot.
func normalizeRow(out, row []float32) error {
	var ss float64
	for _, v := range row {
		ss += float64(v) * float64(v)
	}
	switch {
	case math.IsNaN(ss) || math.IsInf(ss, 0):
		return fmt.Errorf("not finite (NaN or Inf), expected finite values")
	case ss == 0:
		return fmt.Errorf("all zeros, expected a row with a non-zero norm")
	}
	inv := 1 / math.Sqrt(ss)
	for i, v := range row {
		out[i] = float32(float64(v) * inv)
	}
	return nil
}
