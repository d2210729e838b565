package tensor

import (
	"math"

	"github.com/duel-ssl/duel/kernels/vecmath"
)

// cpuBackend is the built-in host backend, registered as "cpu".
var cpuBackend Backend = cpu{prec: new(cpuPrecision)}

func init() { Register(cpuBackend) }

// cpu is the host backend: float32 storage in Buffer.Host, loops the
// compiler can bounds-check-eliminate on contiguous rows, and matrix
// products through kernels/gemm. prec, shared by the copies of the
// registered value, holds the precision of its products and
// convolutions (SetCPUPrecision); nil means fp32.
type cpu struct{ prec *cpuPrecision }

func (cpu) Name() string { return "cpu" }

func (cpu) Alloc(n int) Buffer { return Buffer{Host: make([]float32, n)} }

func (cpu) CopyIn(dst Buffer, off int, src []float32) { copy(dst.Host[off:off+len(src)], src) }

func (cpu) CopyOut(dst []float32, src Buffer, off int) { copy(dst, src.Host[off:off+len(dst)]) }

func (cpu) Fill(dst Operand, v float32) {
	if numel(dst.Shape) == 0 {
		return
	}
	shape, st := collapse(dst.Shape, dst.Strides)
	s := st[0][len(shape)-1]
	d := dst.Buf.Host
	eachRow(shape, st, []int{dst.Offset}, func(o []int, m int) {
		if s == 1 {
			row := d[o[0] : o[0]+m]
			for i := range row {
				row[i] = v
			}
			return
		}
		for i, p := 0, o[0]; i < m; i, p = i+1, p+s {
			d[p] = v
		}
	})
}

func (cpu) Unary(op UnaryOp, dst, src Operand, p float32) {
	n := numel(dst.Shape)
	if n == 0 {
		return
	}
	d, s := dst.Buf.Host, src.Buf.Host
	if isContiguous(dst.Shape, dst.Strides) && isContiguous(src.Shape, src.Strides) {
		dv, sv := d[dst.Offset:dst.Offset+n], s[src.Offset:src.Offset+n]
		if n*unaryCost(op) < parallelMin {
			unaryVec(op, dv, sv, p)
		} else {
			parallelFlat(n*unaryCost(op), n, func(i, j int) { unaryVec(op, dv[i:j], sv[i:j], p) })
		}
		return
	}
	if op == OpCopy && copyTransposed(dst, src) {
		return
	}
	shape, st := collapse(dst.Shape, dst.Strides, src.Strides)
	last := len(shape) - 1
	ds, ss := st[0][last], st[1][last]
	row := func(o []int, m int) {
		if ds == 1 && ss == 1 {
			unaryVec(op, d[o[0]:o[0]+m], s[o[1]:o[1]+m], p)
			return
		}
		for i, dp, sp := 0, o[0], o[1]; i < m; i, dp, sp = i+1, dp+ds, sp+ss {
			d[dp] = unary1(op, s[sp], p)
		}
	}
	parallelRows(n*unaryCost(op), shape, st, []int{dst.Offset, src.Offset}, row)
}

func (cpu) Binary(op BinaryOp, dst, a, b Operand) {
	n := numel(dst.Shape)
	if n == 0 {
		return
	}
	d, x, y := dst.Buf.Host, a.Buf.Host, b.Buf.Host
	if isContiguous(dst.Shape, dst.Strides) {
		dv := d[dst.Offset : dst.Offset+n]
		ac, bc := isContiguous(a.Shape, a.Strides), isContiguous(b.Shape, b.Strides)
		switch {
		case ac && bc:
			av, bv := x[a.Offset:a.Offset+n], y[b.Offset:b.Offset+n]
			if n < parallelMin {
				binaryVV(op, dv, av, bv)
			} else {
				parallelFlat(n, n, func(i, j int) { binaryVV(op, dv[i:j], av[i:j], bv[i:j]) })
			}
			return
		case ac && allZero(b.Strides):
			av, s := x[a.Offset:a.Offset+n], y[b.Offset]
			if n < parallelMin {
				binaryVS(op, dv, av, s)
			} else {
				parallelFlat(n, n, func(i, j int) { binaryVS(op, dv[i:j], av[i:j], s) })
			}
			return
		case bc && allZero(a.Strides):
			s, bv := x[a.Offset], y[b.Offset:b.Offset+n]
			if n < parallelMin {
				binarySV(op, dv, s, bv)
			} else {
				parallelFlat(n, n, func(i, j int) { binarySV(op, dv[i:j], s, bv[i:j]) })
			}
			return
		}
	}
	shape, st := collapse(dst.Shape, dst.Strides, a.Strides, b.Strides)
	last := len(shape) - 1
	ds, as, bs := st[0][last], st[1][last], st[2][last]
	row := func(o []int, m int) {
		do, ao, bo := o[0], o[1], o[2]
		switch {
		case ds == 1 && as == 1 && bs == 1:
			binaryVV(op, d[do:do+m], x[ao:ao+m], y[bo:bo+m])
		case ds == 1 && as == 1 && bs == 0:
			binaryVS(op, d[do:do+m], x[ao:ao+m], y[bo])
		case ds == 1 && as == 0 && bs == 1:
			binarySV(op, d[do:do+m], x[ao], y[bo:bo+m])
		default:
			for i := 0; i < m; i, do, ao, bo = i+1, do+ds, ao+as, bo+bs {
				d[do] = binary1(op, x[ao], y[bo])
			}
		}
	}
	parallelRows(n, shape, st, []int{dst.Offset, a.Offset, b.Offset}, row)
}

func (cpu) AddScaled(dst Operand, alpha float32, x Operand) {
	n := numel(dst.Shape)
	if n == 0 {
		return
	}
	d, s := dst.Buf.Host, x.Buf.Host
	if isContiguous(dst.Shape, dst.Strides) && isContiguous(x.Shape, x.Strides) {
		dv, xv := d[dst.Offset:dst.Offset+n], s[x.Offset:x.Offset+n]
		if n < parallelMin {
			axpy(alpha, xv, dv)
		} else {
			parallelFlat(n, n, func(i, j int) { axpy(alpha, xv[i:j], dv[i:j]) })
		}
		return
	}
	shape, st := collapse(dst.Shape, dst.Strides, x.Strides)
	last := len(shape) - 1
	ds, xs := st[0][last], st[1][last]
	row := func(o []int, m int) {
		do, xo := o[0], o[1]
		if ds == 1 && xs == 1 {
			axpy(alpha, s[xo:xo+m], d[do:do+m])
			return
		}
		for i := 0; i < m; i, do, xo = i+1, do+ds, xo+xs {
			d[do] += float32(alpha * s[xo]) // rounded: no fusion (axpyGo)
		}
	}
	parallelRows(n, shape, st, []int{dst.Offset, x.Offset}, row)
}

// axpy computes y += alpha*x.
func axpy(alpha float32, x, y []float32) {
	x = x[:len(y)]
	if useAVX2 && len(y) >= simdMin {
		axpyAVX2(y, x, alpha)
		return
	}
	axpyGo(alpha, x, y)
}

// axpyGo is axpy in plain Go, the product rounded before the sum as
// axpyAVX2 rounds it (the conversion keeps arm64's compiler, and amd64's
// at GOAMD64=v3, from fusing them).
func axpyGo(alpha float32, x, y []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(alpha * x[i])
	}
}

// unaryCost weighs transcendental functions for the parallel split.
func unaryCost(op UnaryOp) int {
	switch op {
	case OpExp, OpLog, OpTanh, OpSigmoid, OpPowScalar:
		return 8
	}
	return 1
}

// unary1 applies op to one value.
func unary1(op UnaryOp, x, p float32) float32 {
	switch op {
	case OpCopy:
		return x
	case OpNeg:
		return -x
	case OpExp:
		return vecmath.Expf(x)
	case OpLog:
		return float32(math.Log(float64(x)))
	case OpSqrt:
		return float32(math.Sqrt(float64(x)))
	case OpAbs:
		return abs32(x)
	case OpRelu:
		if x > 0 {
			return x
		}
		return 0
	case OpTanh:
		return tanh1(x)
	case OpSigmoid:
		return sigmoid1(x)
	case OpSquare:
		return x * x
	case OpSign:
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x // ±0 and NaN
	case OpAddScalar:
		return x + p
	case OpMulScalar:
		return x * p
	case OpPowScalar:
		return pow32(x, p)
	}
	panic("tensor: unknown unary op " + op.String())
}

// pow32 is x^p with exact shortcuts for common exponents.
func pow32(x, p float32) float32 {
	switch p {
	case 0:
		return 1
	case 1:
		return x
	case 2:
		return x * x
	case 0.5:
		return float32(math.Sqrt(float64(x)))
	case -1:
		return 1 / x
	}
	return float32(math.Pow(float64(x), float64(p)))
}

// unaryVec applies op to contiguous rows of equal length.
func unaryVec(op UnaryOp, d, s []float32, p float32) {
	s = s[:len(d)]
	if useAVX2 && len(d) >= simdMin {
		switch op {
		case OpRelu:
			reluAVX2(d, s)
			return
		case OpAddScalar:
			addVS(d, s, p)
			return
		case OpMulScalar:
			mulVS(d, s, p)
			return
		case OpSquare:
			mulVV(d, s, s)
			return
		}
	}
	unaryVecGo(op, d, s, p)
}

// unaryVecGo is unaryVec without the package's AVX2 loops. Exp, Sigmoid
// and Tanh still go through kernels/vecmath, whose kernel gives the bits of
// its Go reference.
func unaryVecGo(op UnaryOp, d, s []float32, p float32) {
	s = s[:len(d)]
	switch op {
	case OpCopy:
		copy(d, s)
	case OpNeg:
		for i := range d {
			d[i] = -s[i]
		}
	case OpRelu:
		for i := range d {
			v := s[i]
			if !(v > 0) {
				v = 0
			}
			d[i] = v
		}
	case OpSquare:
		for i := range d {
			d[i] = s[i] * s[i]
		}
	case OpAddScalar:
		for i := range d {
			d[i] = s[i] + p
		}
	case OpMulScalar:
		for i := range d {
			d[i] = s[i] * p
		}
	case OpExp:
		vecmath.Exp(d, s)
	case OpSigmoid:
		sigmoidVec(d, s)
	case OpTanh:
		tanhVec(d, s)
	default:
		for i := range d {
			d[i] = unary1(op, s[i], p)
		}
	}
}
