// Package reference is the plain-Go oracle implementation of
// tensor.Backend: every operation is the obvious loop over multi-indices,
// computed in float64 and rounded once to float32. It favours being
// obviously right over speed; package tensor/backendtest checks other
// backends against it.
package reference

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/tensor"
)

// Backend is the reference backend. Its storage is host memory. The zero
// value is ready to use; it is not registered by default.
type Backend struct{}

// Name returns "reference".
func (Backend) Name() string { return "reference" }

// Alloc returns zeroed host storage.
func (Backend) Alloc(n int) tensor.Buffer { return tensor.Buffer{Host: make([]float32, n)} }

// CopyIn copies src into dst starting at element off.
func (Backend) CopyIn(dst tensor.Buffer, off int, src []float32) {
	for i, v := range src {
		dst.Host[off+i] = v
	}
}

// CopyOut copies len(dst) elements starting at off into dst.
func (Backend) CopyOut(dst []float32, src tensor.Buffer, off int) {
	for i := range dst {
		dst[i] = src.Host[off+i]
	}
}

// Fill sets every element of dst to v.
func (Backend) Fill(dst tensor.Operand, v float32) {
	forEachIndex(dst.Shape, func(idx []int) { dst.Buf.Host[offset(dst, idx)] = v })
}

// Unary computes dst = op(src, p).
func (Backend) Unary(op tensor.UnaryOp, dst, src tensor.Operand, p float32) {
	vals := make([]float32, 0, numel(dst.Shape))
	forEachIndex(dst.Shape, func(idx []int) {
		vals = append(vals, float32(Unary(op, float64(src.Buf.Host[offset(src, idx)]), float64(p))))
	})
	store(dst, vals)
}

// Unary is the float64 definition of a unary operation.
func Unary(op tensor.UnaryOp, x, p float64) float64 {
	switch op {
	case tensor.OpCopy:
		return x
	case tensor.OpNeg:
		return -x
	case tensor.OpExp:
		return math.Exp(x)
	case tensor.OpLog:
		return math.Log(x)
	case tensor.OpSqrt:
		return math.Sqrt(x)
	case tensor.OpAbs:
		return math.Abs(x)
	case tensor.OpRelu:
		if x > 0 {
			return x
		}
		return 0
	case tensor.OpTanh:
		return math.Tanh(x)
	case tensor.OpSigmoid:
		return 1 / (1 + math.Exp(-x))
	case tensor.OpSquare:
		return x * x
	case tensor.OpSign:
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x
	case tensor.OpAddScalar:
		return x + p
	case tensor.OpMulScalar:
		return x * p
	case tensor.OpPowScalar:
		return math.Pow(x, p)
	}
	panic(fmt.Sprintf("reference: unknown unary op %v", op))
}

// Binary computes dst = op(a, b).
func (Backend) Binary(op tensor.BinaryOp, dst, a, b tensor.Operand) {
	vals := make([]float32, 0, numel(dst.Shape))
	forEachIndex(dst.Shape, func(idx []int) {
		x := float64(a.Buf.Host[offset(a, idx)])
		y := float64(b.Buf.Host[offset(b, idx)])
		vals = append(vals, float32(Binary(op, x, y)))
	})
	store(dst, vals)
}

// Binary is the float64 definition of a binary operation.
func Binary(op tensor.BinaryOp, x, y float64) float64 {
	switch op {
	case tensor.OpAdd:
		return x + y
	case tensor.OpSub:
		return x - y
	case tensor.OpMul:
		return x * y
	case tensor.OpDiv:
		return x / y
	case tensor.OpMaximum:
		return max(x, y)
	case tensor.OpMinimum:
		return min(x, y)
	}
	panic(fmt.Sprintf("reference: unknown binary op %v", op))
}

// AddScaled computes dst += alpha*x.
func (Backend) AddScaled(dst tensor.Operand, alpha float32, x tensor.Operand) {
	vals := make([]float32, 0, numel(dst.Shape))
	forEachIndex(dst.Shape, func(idx []int) {
		d := float64(dst.Buf.Host[offset(dst, idx)])
		vals = append(vals, float32(d+float64(alpha)*float64(x.Buf.Host[offset(x, idx)])))
	})
	store(dst, vals)
}

// Reduce reduces src into dst over the axes where dst has size 1.
func (Backend) Reduce(op tensor.ReduceOp, dst, src tensor.Operand) {
	nd := numel(dst.Shape)
	acc := make([]float64, nd)
	cnt := make([]int, nd)
	for i := range acc {
		switch op {
		case tensor.ReduceMax:
			acc[i] = math.Inf(-1)
		case tensor.ReduceMin:
			acc[i] = math.Inf(1)
		}
	}
	didx := make([]int, len(dst.Shape))
	forEachIndex(src.Shape, func(idx []int) {
		for i := range idx {
			didx[i] = idx[i]
			if dst.Shape[i] == 1 {
				didx[i] = 0
			}
		}
		j := rowMajor(dst.Shape, didx)
		v := float64(src.Buf.Host[offset(src, idx)])
		switch op {
		case tensor.ReduceSum, tensor.ReduceMean:
			acc[j] += v
		case tensor.ReduceMax:
			acc[j] = max(acc[j], v)
		case tensor.ReduceMin:
			acc[j] = min(acc[j], v)
		default:
			panic(fmt.Sprintf("reference: unknown reduction %v", op))
		}
		cnt[j]++
	})
	vals := make([]float32, nd)
	for i := range vals {
		if op == tensor.ReduceMean {
			acc[i] /= float64(cnt[i])
		}
		vals[i] = float32(acc[i])
	}
	store(dst, vals)
}

// ArgMax stores the index of the first largest element of every line.
func (Backend) ArgMax(dst []int, src tensor.Operand, axis int) {
	outer := make([]int, 0, len(src.Shape))
	for i, d := range src.Shape {
		if i != axis {
			outer = append(outer, d)
		}
	}
	full := make([]int, len(src.Shape))
	n := 0
	forEachIndex(outer, func(idx []int) {
		copy(full[:axis], idx[:axis])
		copy(full[axis+1:], idx[axis:])
		best, bi := math.Inf(-1), -1
		for j := 0; j < src.Shape[axis]; j++ {
			full[axis] = j
			v := float64(src.Buf.Host[offset(src, full)])
			if bi < 0 || v > best {
				best, bi = v, j
			}
		}
		dst[n] = bi
		n++
	})
}

// Gemm computes the batched product with float64 dot products.
func (Backend) Gemm(g tensor.GemmArgs) {
	at := func(x []float32, off, ld int, trans bool, r, c int) float64 {
		if trans {
			r, c = c, r
		}
		return float64(x[off+r*ld+c])
	}
	for bi := 0; bi < g.Batch; bi++ {
		oa, ob, oc := g.OffA+bi*g.StrideA, g.OffB+bi*g.StrideB, g.OffC+bi*g.StrideC
		for i := 0; i < g.M; i++ {
			for j := 0; j < g.N; j++ {
				s := 0.0
				for p := 0; p < g.K; p++ {
					s += at(g.A.Host, oa, g.LDA, g.TransA, i, p) * at(g.B.Host, ob, g.LDB, g.TransB, p, j)
				}
				v := float64(g.Alpha) * s
				if g.Beta != 0 {
					v += float64(g.Beta) * float64(g.C.Host[oc+i*g.LDC+j])
				}
				g.C.Host[oc+i*g.LDC+j] = float32(v)
			}
		}
	}
}

// Im2Col writes the im2col matrix of the image at src[srcOff:].
func (Backend) Im2Col(dst tensor.Buffer, dstOff int, src tensor.Buffer, srcOff int, g tensor.ConvGeom) {
	oh, ow := g.OutH(), g.OutW()
	for c := 0; c < g.C; c++ {
		for i := 0; i < g.KH; i++ {
			for j := 0; j < g.KW; j++ {
				r := (c*g.KH+i)*g.KW + j
				for oy := 0; oy < oh; oy++ {
					for ox := 0; ox < ow; ox++ {
						y, x := oy*g.StrideH+i-g.PadH, ox*g.StrideW+j-g.PadW
						v := float32(0)
						if y >= 0 && y < g.H && x >= 0 && x < g.W {
							v = src.Host[srcOff+(c*g.H+y)*g.W+x]
						}
						dst.Host[dstOff+r*oh*ow+oy*ow+ox] = v
					}
				}
			}
		}
	}
}

// Col2Im adds the im2col matrix at col[colOff:] into the image at dst[dstOff:].
func (Backend) Col2Im(dst tensor.Buffer, dstOff int, col tensor.Buffer, colOff int, g tensor.ConvGeom) {
	oh, ow := g.OutH(), g.OutW()
	sum := make([]float64, g.C*g.H*g.W)
	for i := range sum {
		sum[i] = float64(dst.Host[dstOff+i])
	}
	for c := 0; c < g.C; c++ {
		for i := 0; i < g.KH; i++ {
			for j := 0; j < g.KW; j++ {
				r := (c*g.KH+i)*g.KW + j
				for oy := 0; oy < oh; oy++ {
					for ox := 0; ox < ow; ox++ {
						y, x := oy*g.StrideH+i-g.PadH, ox*g.StrideW+j-g.PadW
						if y >= 0 && y < g.H && x >= 0 && x < g.W {
							sum[(c*g.H+y)*g.W+x] += float64(col.Host[colOff+r*oh*ow+oy*ow+ox])
						}
					}
				}
			}
		}
	}
	for i, v := range sum {
		dst.Host[dstOff+i] = float32(v)
	}
}

// store writes vals (row-major over dst's shape) into dst. Results are
// computed before storing, so dst may alias the sources.
func store(dst tensor.Operand, vals []float32) {
	n := 0
	forEachIndex(dst.Shape, func(idx []int) {
		dst.Buf.Host[offset(dst, idx)] = vals[n]
		n++
	})
}

// forEachIndex calls f with every multi-index of shape in row-major order.
// f must not keep idx.
func forEachIndex(shape []int, f func(idx []int)) {
	if numel(shape) == 0 {
		return
	}
	idx := make([]int, len(shape))
	for {
		f(idx)
		d := len(shape) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

func offset(o tensor.Operand, idx []int) int {
	off := o.Offset
	for i, v := range idx {
		off += v * o.Strides[i]
	}
	return off
}

func rowMajor(shape, idx []int) int {
	j := 0
	for i, v := range idx {
		j = j*shape[i] + v
	}
	return j
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
