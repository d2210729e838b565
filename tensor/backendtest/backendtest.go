// Package backendtest is the conformance suite for tensor.Backend
// implementations, in the manner of gonum's blas/testblas: Run drives a
// backend through random problems (odd sizes, zero sizes, strided and
// broadcast views, every GEMM transposition) and compares every result,
// including the storage around each destination view, with the float64
// oracle in tensor/reference.
//
// A backend's own test calls it:
//
//	func TestConformance(t *testing.T) { backendtest.Run(t, mybackend.New()) }
package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/reference"
)

// Run checks every method of b against the reference backend.
func Run(t *testing.T, b tensor.Backend) {
	tests := []struct {
		name string
		fn   func(*testing.T, *harness)
	}{
		{"CopyInOut", testCopy},
		{"Fill", testFill},
		{"Unary", testUnary},
		{"UnaryInPlace", testUnaryInPlace},
		{"Binary", testBinary},
		{"BinaryInPlace", testBinaryInPlace},
		{"AddScaled", testAddScaled},
		{"Reduce", testReduce},
		{"ArgMax", testArgMax},
		{"Gemm", testGemm},
		{"GemmBatch", testGemmBatch},
		{"Im2Col", testIm2Col},
		{"Col2Im", testCol2Im},
		{"Col2ImAdjoint", testCol2ImAdjoint},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, &harness{b: b, r: rand.New(rand.NewPCG(uint64(i)+1, 0x5eed))})
		})
	}
}

// harness holds the backend under test, the oracle and a deterministic
// random source.
type harness struct {
	b   tensor.Backend
	ref reference.Backend
	r   *rand.Rand
}

// pair is one storage, uploaded to the backend under test and copied for
// the reference.
type pair struct {
	h    *harness
	n    int
	got  tensor.Buffer
	want tensor.Buffer
}

// store allocates a pair holding vals.
func (h *harness) store(vals []float32) *pair {
	p := &pair{h: h, n: len(vals), got: h.b.Alloc(len(vals)), want: h.ref.Alloc(len(vals))}
	h.b.CopyIn(p.got, 0, vals)
	copy(p.want.Host, vals)
	return p
}

// randStore allocates a pair of n values uniform in [lo, hi).
func (h *harness) randStore(n int, lo, hi float64) *pair {
	return h.store(h.randVals(n, lo, hi))
}

func (h *harness) randVals(n int, lo, hi float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(lo + (hi-lo)*h.r.Float64())
	}
	return v
}

// layout is a strided view into a storage.
type layout struct {
	shape, strides []int
	offset, size   int // size: elements of storage the view needs
}

// edgeShapes are tried first by every elementwise test: 0-d, empty, size-1
// and odd shapes.
var edgeShapes = [][]int{nil, {1}, {0}, {3, 0, 2}, {1, 1, 1}, {7}, {5, 1, 3}, {2, 3, 4, 5}}

// shapeFor returns an edge shape for the first iterations of a test loop
// (after iteration 0, which tests use for a large case) and a random
// shape after them.
func (h *harness) shapeFor(it int) []int {
	if it >= 1 && it <= len(edgeShapes) {
		return append([]int(nil), edgeShapes[it-1]...)
	}
	return h.randShape(4)
}

// randShape returns a shape of rank 0..maxRank with small, odd and
// (sometimes) zero dimensions.
func (h *harness) randShape(maxRank int) []int {
	dims := []int{1, 1, 2, 3, 4, 5, 7, 8, 13, 17}
	nd := h.r.IntN(maxRank + 1)
	s := make([]int, nd)
	for i := range s {
		s[i] = dims[h.r.IntN(len(dims))]
		if h.r.IntN(25) == 0 {
			s[i] = 0
		}
	}
	return s
}

// randLayout lays shape out in storage: contiguous, permuted in memory,
// padded (a slice of a larger tensor) and, when broadcast is set, with some
// 0 strides.
func (h *harness) randLayout(shape []int, broadcast bool) layout {
	nd := len(shape)
	order := make([]int, nd)
	for i := range order {
		order[i] = i
	}
	plain := h.r.IntN(3) == 0
	if !plain {
		order = h.r.Perm(nd)
	}
	strides := make([]int, nd)
	acc := 1
	for i := nd - 1; i >= 0; i-- {
		ax := order[i]
		strides[ax] = acc
		ext := shape[ax]
		if !plain && h.r.IntN(3) == 0 {
			ext += 1 + h.r.IntN(3)
		}
		acc *= max(ext, 1)
	}
	if broadcast && !plain {
		for ax := range strides {
			if h.r.IntN(4) == 0 {
				strides[ax] = 0
			}
		}
	}
	off := 0
	if !plain {
		off = h.r.IntN(5)
	}
	return layout{shape: shape, strides: strides, offset: off, size: off + acc}
}

func (p *pair) operands(l layout) (got, want tensor.Operand) {
	return tensor.Operand{Buf: p.got, Offset: l.offset, Shape: l.shape, Strides: l.strides},
		tensor.Operand{Buf: p.want, Offset: l.offset, Shape: l.shape, Strides: l.strides}
}

// values downloads the backend's copy of the storage.
func (p *pair) values() []float32 {
	v := make([]float32, p.n)
	p.h.b.CopyOut(v, p.got, 0)
	return v
}

// check compares the whole storage with the reference: |got-want| <=
// atol + rtol*|want|, NaN matching NaN and infinities matching exactly.
// It reports the first few mismatches.
func (p *pair) check(t *testing.T, what string, rtol, atol float64) bool {
	t.Helper()
	return compare(t, what, p.values(), p.want.Host, rtol, atol)
}

func compare(t *testing.T, what string, got, want []float32, rtol, atol float64) bool {
	t.Helper()
	bad := 0
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		ok := math.Abs(g-w) <= atol+rtol*math.Abs(w) ||
			(math.IsNaN(g) && math.IsNaN(w)) || (math.IsInf(w, 0) && g == w)
		if !ok {
			if bad < 5 {
				t.Errorf("%s: element %d = %v, want %v (tolerance %.3g)", what, i, got[i], want[i], atol+rtol*math.Abs(w))
			}
			bad++
		}
	}
	if bad >= 5 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(want))
	}
	return bad == 0
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func testCopy(t *testing.T, h *harness) {
	for _, n := range []int{0, 1, 7, 64, 1000} {
		v := h.randVals(n, -1, 1)
		buf := h.b.Alloc(n + 3)
		h.b.CopyIn(buf, 3, v)
		got := make([]float32, n+3)
		h.b.CopyOut(got, buf, 0)
		want := append([]float32{0, 0, 0}, v...)
		compare(t, fmt.Sprintf("CopyIn/CopyOut n=%d (Alloc must zero)", n), got, want, 0, 0)
		part := make([]float32, n/2)
		h.b.CopyOut(part, buf, 3+n-n/2)
		compare(t, fmt.Sprintf("CopyOut tail n=%d", n), part, v[n-n/2:], 0, 0)
	}
}

func testFill(t *testing.T, h *harness) {
	for it := 0; it < 40; it++ {
		l := h.randLayout(h.shapeFor(it), false)
		p := h.randStore(l.size, -1, 1)
		g, w := p.operands(l)
		h.b.Fill(g, 2.5)
		h.ref.Fill(w, 2.5)
		p.check(t, fmt.Sprintf("Fill shape %v strides %v", l.shape, l.strides), 0, 0)
	}
}

// unaryDomain returns the input range, parameters and tolerance for op.
func unaryDomain(op tensor.UnaryOp) (lo, hi float64, ps []float32, rtol float64) {
	switch op {
	case tensor.OpLog, tensor.OpSqrt:
		return 0.01, 10, []float32{0}, 2e-6
	case tensor.OpPowScalar:
		return 0.01, 4, []float32{0, 1, 2, 0.5, -1, 3, 1.7, -0.3}, 4e-6
	case tensor.OpExp:
		return -20, 20, []float32{0}, 4e-6
	case tensor.OpTanh, tensor.OpSigmoid:
		return -12, 12, []float32{0}, 4e-6
	case tensor.OpAddScalar, tensor.OpMulScalar:
		return -3, 3, []float32{0, 1, -2.5, 0.125}, 2e-7
	}
	return -3, 3, []float32{0}, 2e-7
}

var unaryOps = []tensor.UnaryOp{tensor.OpCopy, tensor.OpNeg, tensor.OpExp, tensor.OpLog, tensor.OpSqrt, tensor.OpAbs,
	tensor.OpRelu, tensor.OpTanh, tensor.OpSigmoid, tensor.OpSquare, tensor.OpSign, tensor.OpAddScalar, tensor.OpMulScalar, tensor.OpPowScalar}

func testUnary(t *testing.T, h *harness) {
	for _, op := range unaryOps {
		lo, hi, ps, rtol := unaryDomain(op)
		for it := 0; it < 25; it++ {
			shape := h.shapeFor(it)
			if it == 0 {
				shape = []int{300, 301} // large enough for parallel paths
			}
			ls := h.randLayout(shape, true)
			ld := h.randLayout(shape, false)
			if it == 1 {
				// The two innermost axes swapped, as in Contiguous of a
				// transposed batch (large enough for tiled copies).
				shape = []int{3, 40, 50}
				ls = layout{shape: shape, strides: []int{2000, 1, 40}, offset: 1, size: 6001}
				ld = layout{shape: shape, strides: []int{2000, 50, 1}, size: 6000}
			}
			src := h.randStore(ls.size, lo, hi)
			dst := h.randStore(ld.size, -1, 1)
			p := ps[it%len(ps)]
			sg, sw := src.operands(ls)
			dg, dw := dst.operands(ld)
			h.b.Unary(op, dg, sg, p)
			h.ref.Unary(op, dw, sw, p)
			dst.check(t, fmt.Sprintf("%v(p=%v) shape %v src strides %v dst strides %v", op, p, shape, ls.strides, ld.strides), rtol, 1e-30)
		}
	}
	// Special values.
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), 100, -100}
	for _, op := range []tensor.UnaryOp{tensor.OpNeg, tensor.OpExp, tensor.OpAbs, tensor.OpRelu, tensor.OpTanh, tensor.OpSigmoid, tensor.OpSquare, tensor.OpSign} {
		l := layout{shape: []int{len(special)}, strides: []int{1}, size: len(special)}
		src := h.store(special)
		dst := h.randStore(len(special), -1, 1)
		sg, sw := src.operands(l)
		dg, dw := dst.operands(l)
		h.b.Unary(op, dg, sg, 0)
		h.ref.Unary(op, dw, sw, 0)
		dst.check(t, fmt.Sprintf("%v of special values %v", op, special), 4e-6, 0)
	}
}

func testUnaryInPlace(t *testing.T, h *harness) {
	for _, op := range []tensor.UnaryOp{tensor.OpMulScalar, tensor.OpExp, tensor.OpCopy, tensor.OpRelu} {
		for it := 0; it < 10; it++ {
			l := h.randLayout(h.randShape(4), false)
			p := h.randStore(l.size, -2, 2)
			g, w := p.operands(l)
			h.b.Unary(op, g, g, 0.75)
			h.ref.Unary(op, w, w, 0.75)
			p.check(t, fmt.Sprintf("in-place %v shape %v strides %v", op, l.shape, l.strides), 4e-6, 1e-30)
		}
	}
}

var binaryOps = []tensor.BinaryOp{tensor.OpAdd, tensor.OpSub, tensor.OpMul, tensor.OpDiv, tensor.OpMaximum, tensor.OpMinimum}

// broadcastPair returns the shapes of two operands that broadcast to
// shape: some dimensions set to 1, some leading ones dropped.
func (h *harness) broadcastPair(shape []int) ([]int, []int) {
	pick := func() []int {
		s := append([]int(nil), shape...)
		for i := range s {
			if h.r.IntN(3) == 0 {
				s[i] = 1
			}
		}
		if h.r.IntN(3) == 0 && len(s) > 0 {
			s = s[h.r.IntN(len(s)+1):]
		}
		return s
	}
	return pick(), pick()
}

// asBroadcast returns strides reading shape s as shape to (0 for stretched
// or missing dimensions), given s's layout.
func asBroadcast(l layout, to []int) layout {
	lead := len(to) - len(l.shape)
	st := make([]int, len(to))
	for i := range to {
		if i >= lead && l.shape[i-lead] == to[i] {
			st[i] = l.strides[i-lead]
		}
	}
	return layout{shape: to, strides: st, offset: l.offset, size: l.size}
}

func testBinary(t *testing.T, h *harness) {
	for _, op := range binaryOps {
		for it := 0; it < 40; it++ {
			shape := h.shapeFor(it)
			if it == 0 {
				shape = []int{257, 300}
			}
			sa, sb := h.broadcastPair(shape)
			switch it % 8 {
			case 1:
				sa, sb = shape, shape
			case 2:
				sb = nil // scalar
			case 3:
				sa = nil
			}
			la, lb := h.randLayout(sa, false), h.randLayout(sb, false)
			ld := h.randLayout(shape, false)
			a := h.randStore(la.size, -2, 2)
			lo := -2.0
			if op == tensor.OpDiv {
				lo = 0.25
			}
			b := h.randStore(lb.size, lo, 2)
			dst := h.randStore(ld.size, -1, 1)
			ag, aw := a.operands(asBroadcast(la, shape))
			bg, bw := b.operands(asBroadcast(lb, shape))
			dg, dw := dst.operands(ld)
			h.b.Binary(op, dg, ag, bg)
			h.ref.Binary(op, dw, aw, bw)
			dst.check(t, fmt.Sprintf("%v shapes %v,%v -> %v", op, sa, sb, shape), 2e-7, 1e-30)
		}
	}
}

func testBinaryInPlace(t *testing.T, h *harness) {
	for _, op := range binaryOps {
		for it := 0; it < 10; it++ {
			shape := h.randShape(3)
			l := h.randLayout(shape, false)
			_, sb := h.broadcastPair(shape)
			lb := h.randLayout(sb, false)
			a := h.randStore(l.size, -2, 2)
			b := h.randStore(lb.size, 0.5, 2)
			ag, aw := a.operands(l)
			bg, bw := b.operands(asBroadcast(lb, shape))
			h.b.Binary(op, ag, ag, bg)
			h.ref.Binary(op, aw, aw, bw)
			a.check(t, fmt.Sprintf("in-place %v shape %v with %v", op, shape, sb), 2e-7, 1e-30)
		}
	}
}

func testAddScaled(t *testing.T, h *harness) {
	for it := 0; it < 40; it++ {
		shape := h.shapeFor(it)
		if it == 0 {
			shape = []int{1 << 17}
		}
		ld := h.randLayout(shape, false)
		lx := h.randLayout(shape, true)
		dst := h.randStore(ld.size, -1, 1)
		x := h.randStore(lx.size, -1, 1)
		alpha := float32(h.r.NormFloat64())
		dg, dw := dst.operands(ld)
		xg, xw := x.operands(lx)
		h.b.AddScaled(dg, alpha, xg)
		h.ref.AddScaled(dw, alpha, xw)
		dst.check(t, fmt.Sprintf("AddScaled alpha=%v shape %v strides %v, %v", alpha, shape, ld.strides, lx.strides), 1e-6, 1e-6)
	}
}

var reduceOps = []tensor.ReduceOp{tensor.ReduceSum, tensor.ReduceMean, tensor.ReduceMax, tensor.ReduceMin}

func testReduce(t *testing.T, h *harness) {
	// Every subset of the axes of a 4-d shape, on a permuted layout.
	for _, op := range reduceOps {
		shape := []int{3, 5, 2, 7}
		for mask := 0; mask < 1<<len(shape); mask++ {
			keep := append([]int(nil), shape...)
			for i := range keep {
				if mask&(1<<i) != 0 {
					keep[i] = 1
				}
			}
			ls := layout{shape: shape, strides: []int{1, 3 * 2 * 7, 3, 3 * 2}, offset: 2, size: 2 + 210}
			ld := h.randLayout(keep, false)
			src := h.randStore(ls.size, -2, 2)
			dst := h.randStore(ld.size, -1, 1)
			sg, sw := src.operands(ls)
			dg, dw := dst.operands(ld)
			h.b.Reduce(op, dg, sg)
			h.ref.Reduce(op, dw, sw)
			dst.check(t, fmt.Sprintf("Reduce%v %v -> %v (permuted src)", op, shape, keep), 1e-6, 2e-7*float64(numel(shape)))
		}
	}
	for _, op := range reduceOps {
		for it := 0; it < 60; it++ {
			shape := h.randShape(4)
			switch it {
			case 0:
				shape = []int{100, 1000} // long rows
			case 1:
				shape = []int{1000, 100} // long columns
			}
			keep := append([]int(nil), shape...)
			for i := range keep {
				if h.r.IntN(2) == 0 || (it < 2 && i == it^1) {
					keep[i] = 1
				}
			}
			if it < 2 {
				keep[it] = shape[it]
			}
			ls := h.randLayout(shape, true)
			ld := h.randLayout(keep, false)
			src := h.randStore(ls.size, -2, 2)
			dst := h.randStore(ld.size, -1, 1)
			sg, sw := src.operands(ls)
			dg, dw := dst.operands(ld)
			h.b.Reduce(op, dg, sg)
			h.ref.Reduce(op, dw, sw)
			groups := numel(shape) / max(1, numel(keep))
			dst.check(t, fmt.Sprintf("Reduce%v %v -> %v (src strides %v)", op, shape, keep, ls.strides), 1e-6, 2e-7*float64(groups))
		}
	}
}

func testArgMax(t *testing.T, h *harness) {
	for it := 0; it < 60; it++ {
		shape := h.randShape(4)
		if len(shape) == 0 {
			shape = []int{5}
		}
		axis := h.r.IntN(len(shape))
		if shape[axis] == 0 {
			shape[axis] = 3
		}
		l := h.randLayout(shape, true)
		vals := h.randVals(l.size, -3, 3)
		if it%3 == 0 { // many ties
			for i := range vals {
				vals[i] = float32(math.Round(float64(vals[i])))
			}
		}
		p := h.store(vals)
		g, w := p.operands(l)
		n := numel(shape) / shape[axis]
		got, want := make([]int, n), make([]int, n)
		if n > 0 {
			h.b.ArgMax(got, g, axis)
			h.ref.ArgMax(want, w, axis)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("ArgMax shape %v strides %v axis %d: line %d = %d, want %d", shape, l.strides, axis, i, got[i], want[i])
				break
			}
		}
	}
}

// gemmCase allocates the operands of a product and runs it on both
// backends, checking C.
func (h *harness) gemmCase(t *testing.T, g tensor.GemmArgs, padA, padB, padC int) {
	t.Helper()
	ra, ca := g.M, g.K
	if g.TransA {
		ra, ca = ca, ra
	}
	rb, cb := g.K, g.N
	if g.TransB {
		rb, cb = cb, rb
	}
	g.LDA, g.LDB, g.LDC = max(ca, 1)+padA, max(cb, 1)+padB, max(g.N, 1)+padC
	sizeA, sizeB, sizeC := ra*g.LDA, rb*g.LDB, g.M*g.LDC
	batch := max(g.Batch, 1)
	if g.StrideA != 0 {
		g.StrideA = sizeA
	}
	if g.StrideB != 0 {
		g.StrideB = sizeB
	}
	g.StrideC = sizeC
	a := h.randStore(g.OffA+sizeA*batch, -1, 1)
	b := h.randStore(g.OffB+sizeB*batch, -1, 1)
	cv := h.randVals(g.OffC+sizeC*batch, -1, 1)
	if g.Beta == 0 {
		for i := range cv {
			cv[i] = float32(math.NaN()) // must not be read
		}
		// keep the padding between rows checkable
	}
	c := h.store(cv)
	gg, gw := g, g
	gg.A, gg.B, gg.C = a.got, b.got, c.got
	gw.A, gw.B, gw.C = a.want, b.want, c.want
	h.b.Gemm(gg)
	h.ref.Gemm(gw)
	atol := 3e-7*float64(g.K+1)*math.Abs(float64(g.Alpha)) + 1e-6*math.Abs(float64(g.Beta)) + 1e-7
	c.check(t, fmt.Sprintf("Gemm tA=%v tB=%v m=%d n=%d k=%d alpha=%v beta=%v lda=%d ldb=%d ldc=%d batch=%d strides=%d,%d",
		g.TransA, g.TransB, g.M, g.N, g.K, g.Alpha, g.Beta, g.LDA, g.LDB, g.LDC, g.Batch, g.StrideA, g.StrideB), 1e-6, atol)
}

func testGemm(t *testing.T, h *harness) {
	sizes := []int{0, 1, 2, 3, 5, 8, 16, 17, 31, 33}
	scalars := [][2]float32{{1, 0}, {1, 1}, {0.5, -1}, {-1, 0.25}, {0, 2}, {2, 0}}
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			for it := 0; it < 30; it++ {
				m, n, k := sizes[h.r.IntN(len(sizes))], sizes[h.r.IntN(len(sizes))], sizes[h.r.IntN(len(sizes))]
				s := scalars[it%len(scalars)]
				pad := func() int {
					if h.r.IntN(2) == 0 {
						return 0
					}
					return h.r.IntN(4)
				}
				g := tensor.GemmArgs{TransA: ta, TransB: tb, M: m, N: n, K: k, Alpha: s[0], Beta: s[1], Batch: 1,
					OffA: h.r.IntN(3), OffB: h.r.IntN(3), OffC: h.r.IntN(3)}
				h.gemmCase(t, g, pad(), pad(), pad())
			}
			// Larger than typical cache blocks.
			h.gemmCase(t, tensor.GemmArgs{TransA: ta, TransB: tb, M: 150, N: 97, K: 300, Alpha: 1, Beta: 0.5, Batch: 1}, 1, 0, 3)
		}
	}
}

func testGemmBatch(t *testing.T, h *harness) {
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			for _, bc := range [][2]int{{1, 1}, {0, 1}, {1, 0}} {
				for _, batch := range []int{0, 1, 3} {
					g := tensor.GemmArgs{TransA: ta, TransB: tb, M: 1 + h.r.IntN(9), N: 1 + h.r.IntN(9), K: h.r.IntN(9),
						Alpha: 1, Beta: 0, Batch: batch, StrideA: bc[0], StrideB: bc[1], OffA: 1, OffC: 2}
					h.gemmCase(t, g, h.r.IntN(2), 0, h.r.IntN(2))
				}
				// Many small matrices (a backend may spread them over threads).
				g := tensor.GemmArgs{TransA: ta, TransB: tb, M: 40, N: 41, K: 39, Alpha: 1, Beta: 1,
					Batch: 11, StrideA: bc[0], StrideB: bc[1]}
				h.gemmCase(t, g, 0, 1, 0)
			}
		}
	}
}

// randGeom returns a small convolution geometry, sometimes with an empty
// output.
func (h *harness) randGeom() tensor.ConvGeom {
	return tensor.ConvGeom{
		C: 1 + h.r.IntN(3), H: 1 + h.r.IntN(9), W: 1 + h.r.IntN(9),
		KH: 1 + h.r.IntN(4), KW: 1 + h.r.IntN(4),
		StrideH: 1 + h.r.IntN(3), StrideW: 1 + h.r.IntN(3),
		PadH: h.r.IntN(3), PadW: h.r.IntN(3),
	}
}

func geoms(h *harness) []tensor.ConvGeom {
	gs := []tensor.ConvGeom{
		{C: 3, H: 8, W: 8, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
		{C: 2, H: 9, W: 7, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
		{C: 1, H: 5, W: 5, KH: 1, KW: 1, StrideH: 1, StrideW: 1},
		{C: 2, H: 2, W: 2, KH: 5, KW: 5, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}, // empty output
		{C: 0, H: 4, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1},
	}
	for range 60 {
		gs = append(gs, h.randGeom())
	}
	return gs
}

func colSize(g tensor.ConvGeom) int { return g.C * g.KH * g.KW * g.OutH() * g.OutW() }

func testIm2Col(t *testing.T, h *harness) {
	for _, g := range geoms(h) {
		src := h.randStore(2+g.C*g.H*g.W, -1, 1)
		dst := h.randStore(1+colSize(g)+1, -1, 1)
		h.b.Im2Col(dst.got, 1, src.got, 2, g)
		h.ref.Im2Col(dst.want, 1, src.want, 2, g)
		dst.check(t, fmt.Sprintf("Im2Col %+v", g), 0, 0)
	}
}

func testCol2Im(t *testing.T, h *harness) {
	for _, g := range geoms(h) {
		col := h.randStore(3+colSize(g), -1, 1)
		dst := h.randStore(1+g.C*g.H*g.W+1, -1, 1)
		h.b.Col2Im(dst.got, 1, col.got, 3, g)
		h.ref.Col2Im(dst.want, 1, col.want, 3, g)
		dst.check(t, fmt.Sprintf("Col2Im %+v", g), 1e-6, 1e-6)
	}
}

// testCol2ImAdjoint checks <im2col(x), y> == <x, col2im(y)> on the backend
// alone.
func testCol2ImAdjoint(t *testing.T, h *harness) {
	for _, g := range geoms(h) {
		nx, ny := g.C*g.H*g.W, colSize(g)
		x, y := h.randVals(nx, -1, 1), h.randVals(ny, -1, 1)
		xb, yb := h.b.Alloc(nx), h.b.Alloc(ny)
		h.b.CopyIn(xb, 0, x)
		h.b.CopyIn(yb, 0, y)
		colb, imb := h.b.Alloc(ny), h.b.Alloc(nx)
		h.b.Im2Col(colb, 0, xb, 0, g)
		h.b.Col2Im(imb, 0, yb, 0, g)
		col, im := make([]float32, ny), make([]float32, nx)
		h.b.CopyOut(col, colb, 0)
		h.b.CopyOut(im, imb, 0)
		var lhs, rhs, scale float64
		for i := range y {
			lhs += float64(col[i]) * float64(y[i])
			scale += math.Abs(float64(col[i]) * float64(y[i]))
		}
		for i := range x {
			rhs += float64(x[i]) * float64(im[i])
		}
		if math.Abs(lhs-rhs) > 1e-5*(scale+1) {
			t.Errorf("Col2Im is not the adjoint of Im2Col for %+v: <im2col(x),y> = %v, <x,col2im(y)> = %v", g, lhs, rhs)
		}
	}
}
