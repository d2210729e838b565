package tensor

// transposeTile is the edge of the square tiles copyTransposed moves at a
// time. Small tiles win: with power-of-two row strides every row of a tile
// maps to the same L1 set, so tall tiles thrash the 8-way cache (on
// 1024x1024 tiles of 32 ran no faster than a naive loop, tiles of 8 several
// times faster: bench/RESULTS.md, "Tensor operations vs naive Go loops").
const transposeTile = 8

// copyTransposed copies src into dst when, after collapsing, the two
// innermost dimensions are swapped between them (dst's last dimension is
// contiguous, src's next-to-last is), as in Contiguous of a transposed or
// NCHW->NHWC permuted view. It reads and writes in cache-sized tiles and
// reports false (doing nothing) for other layouts.
func copyTransposed(dst, src Operand) bool {
	shape, st := collapse(dst.Shape, dst.Strides, src.Strides)
	nd := len(shape)
	if nd < 2 {
		return false
	}
	r, c := shape[nd-2], shape[nd-1]
	dr, dc, sr, sc := st[0][nd-2], st[0][nd-1], st[1][nd-2], st[1][nd-1]
	if dc != 1 || sr != 1 || r < 8 || c < 8 {
		return false
	}
	d, s := dst.Buf.Host, src.Buf.Host
	outer := shape[:nd-1]
	outer = append(outer[:nd-2:nd-2], 1) // iterate over all but the last two dims
	ost := [][]int{append(st[0][:nd-2:nd-2], 0), append(st[1][:nd-2:nd-2], 0)}
	eachRow(outer, ost, []int{dst.Offset, src.Offset}, func(o []int, _ int) {
		for i0 := 0; i0 < r; i0 += transposeTile {
			i1 := min(i0+transposeTile, r)
			for j0 := 0; j0 < c; j0 += transposeTile {
				j1 := min(j0+transposeTile, c)
				for i := i0; i < i1; i++ {
					drow := d[o[0]+i*dr+j0 : o[0]+i*dr+j1]
					sp := o[1] + i + j0*sc
					for j := range drow {
						drow[j] = s[sp]
						sp += sc
					}
				}
			}
		}
	})
	return true
}
