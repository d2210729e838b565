package autograd_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/tensor"
)

// Shorthands for building the gradient-check table.
type (
	ins = []*ag.Var
	ts  = []*tensor.Tensor
)

type opCase struct {
	name   string
	f      gradcheck.Func
	inputs ts
	opts   gradcheck.Options
}

// rng returns a deterministic generator per test.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 42)) }

// uniform returns values uniform in [lo, hi).
func uniform(r *rand.Rand, lo, hi float32, shape ...int) *tensor.Tensor {
	t := tensor.New(shape...)
	for i := range t.Data() {
		t.Data()[i] = lo + (hi-lo)*r.Float32()
	}
	return t
}

// awayFromZero returns values in ±[0.2, 1.2): safe around kinks at 0 and
// as denominators.
func awayFromZero(r *rand.Rand, shape ...int) *tensor.Tensor {
	t := uniform(r, 0.2, 1.2, shape...)
	for i := range t.Data() {
		if r.IntN(2) == 0 {
			t.Data()[i] = -t.Data()[i]
		}
	}
	return t
}

// distinct returns a random permutation of well-separated values (no ties
// for Max).
func distinct(r *rand.Rand, shape ...int) *tensor.Tensor {
	t := tensor.New(shape...)
	for i, p := range r.Perm(len(t.Data())) {
		t.Data()[i] = 0.1*float32(p) - 1
	}
	return t
}

func unary(op func(*ag.Tape, *ag.Var) *ag.Var) gradcheck.Func {
	return func(tp *ag.Tape, in ins) *ag.Var { return op(tp, in[0]) }
}

func binary(op func(*ag.Tape, *ag.Var, *ag.Var) *ag.Var) gradcheck.Func {
	return func(tp *ag.Tape, in ins) *ag.Var { return op(tp, in[0], in[1]) }
}

// transposed applies op to the transpose of its 2-d input: a strided view.
func transposed(op func(*ag.Tape, *ag.Var) *ag.Var) gradcheck.Func {
	return func(tp *ag.Tape, in ins) *ag.Var { return op(tp, ag.Transpose(tp, in[0], 0, 1)) }
}

func TestGradArith(t *testing.T) {
	r := rng(1)
	var cases []opCase
	shapes := []struct {
		name string
		a, b []int
	}{
		{"same", []int{3, 4}, []int{3, 4}},
		{"(3,1)x(1,4)", []int{3, 1}, []int{1, 4}},
		{"(2,3,4)x(4)", []int{2, 3, 4}, []int{4}},
		{"(2,3,4)x(3,1)", []int{2, 3, 4}, []int{3, 1}},
		{"(4)x(2,3,4)", []int{4}, []int{2, 3, 4}},
		{"scalar x (2,3)", []int{}, []int{2, 3}},
		{"(2,3) x scalar", []int{2, 3}, []int{}},
		{"(1) x (2,3)", []int{1}, []int{2, 3}},
		{"(1,1,3) x (2,1,1)", []int{1, 1, 3}, []int{2, 1, 1}},
	}
	ops := []struct {
		name string
		op   func(*ag.Tape, *ag.Var, *ag.Var) *ag.Var
	}{{"Add", ag.Add}, {"Sub", ag.Sub}, {"Mul", ag.Mul}, {"Div", ag.Div}}
	for _, op := range ops {
		for _, s := range shapes {
			cases = append(cases, opCase{name: op.name + " " + s.name, f: binary(op.op),
				inputs: ts{awayFromZero(r, s.a...), awayFromZero(r, s.b...)}})
		}
		// The same variable on both sides accumulates two contributions.
		cases = append(cases, opCase{name: op.name + " x,x", inputs: ts{awayFromZero(r, 2, 3)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return op.op(tp, in[0], in[0]) }})
		// One side constant.
		cases = append(cases, opCase{name: op.name + " const b", f: binary(op.op),
			inputs: ts{awayFromZero(r, 2, 3), awayFromZero(r, 3)}, opts: gradcheck.Options{Const: []int{1}}})
		cases = append(cases, opCase{name: op.name + " const a", f: binary(op.op),
			inputs: ts{awayFromZero(r, 2, 3), awayFromZero(r, 2, 3)}, opts: gradcheck.Options{Const: []int{0}}})
	}
	runCases(t, cases)
}

// TestGradBroadcastRandom checks the binary ops on random broadcast-
// compatible shape pairs of rank 0 to 4 with size-1 dimensions.
func TestGradBroadcastRandom(t *testing.T) {
	r := rng(13)
	ops := []func(*ag.Tape, *ag.Var, *ag.Var) *ag.Var{ag.Add, ag.Sub, ag.Mul, ag.Div}
	names := []string{"Add", "Sub", "Mul", "Div"}
	var cases []opCase
	for range 24 {
		rank := r.IntN(5)
		out := make([]int, rank)
		for i := range out {
			out[i] = 1 + r.IntN(3)
		}
		// Each operand drops some leading axes and sets some others to 1.
		operand := func() []int {
			s := append([]int(nil), out[r.IntN(rank+1):]...)
			for i := range s {
				if r.IntN(3) == 0 {
					s[i] = 1
				}
			}
			return s
		}
		a, b := operand(), operand()
		k := r.IntN(len(ops))
		cases = append(cases, opCase{name: names[k] + " " + shapeName(a) + " " + shapeName(b), f: binary(ops[k]),
			inputs: ts{awayFromZero(r, a...), awayFromZero(r, b...)}})
	}
	runCases(t, cases)
}

func TestGradUnary(t *testing.T) {
	r := rng(2)
	ops := []struct {
		name     string
		op       func(*ag.Tape, *ag.Var) *ag.Var
		positive bool // domain x > 0
	}{
		{"Neg", ag.Neg, false},
		{"AddScalar", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.AddScalar(tp, x, 1.5) }, false},
		{"MulScalar", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.MulScalar(tp, x, -2.5) }, false},
		{"PowScalar 3", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.PowScalar(tp, x, 3) }, false},
		{"PowScalar -1.5", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.PowScalar(tp, x, -1.5) }, true},
		{"PowScalar 0.5", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.PowScalar(tp, x, 0.5) }, true},
		{"Square", ag.Square, false},
		{"Abs", ag.Abs, false},
		{"Exp", ag.Exp, false},
		{"Log", ag.Log, true},
		{"Sqrt", ag.Sqrt, true},
		{"ReLU", ag.ReLU, false},
		{"Tanh", ag.Tanh, false},
		{"Sigmoid", ag.Sigmoid, false},
		{"Softplus", ag.Softplus, false},
	}
	var cases []opCase
	for _, op := range ops {
		gen := func(shape ...int) *tensor.Tensor {
			if op.positive {
				return uniform(r, 0.5, 2, shape...)
			}
			return awayFromZero(r, shape...)
		}
		cases = append(cases,
			opCase{name: op.name + " (2,3)", f: unary(op.op), inputs: ts{gen(2, 3)}},
			opCase{name: op.name + " (1,3,1)", f: unary(op.op), inputs: ts{gen(1, 3, 1)}},
			opCase{name: op.name + " scalar", f: unary(op.op), inputs: ts{gen()}},
			opCase{name: op.name + " strided", f: transposed(op.op), inputs: ts{gen(3, 2)}},
		)
	}
	runCases(t, cases)
}

func TestGradMatMul(t *testing.T) {
	r := rng(3)
	cases := []opCase{
		{name: "(3,4)x(4,5)", f: binary(ag.MatMul), inputs: ts{awayFromZero(r, 3, 4), awayFromZero(r, 4, 5)}},
		{name: "(1,4)x(4,1)", f: binary(ag.MatMul), inputs: ts{awayFromZero(r, 1, 4), awayFromZero(r, 4, 1)}},
		{name: "(5,1)x(1,3)", f: binary(ag.MatMul), inputs: ts{awayFromZero(r, 5, 1), awayFromZero(r, 1, 3)}},
		{name: "transposed operands", inputs: ts{awayFromZero(r, 4, 3), awayFromZero(r, 5, 4)},
			f: func(tp *ag.Tape, in ins) *ag.Var {
				return ag.MatMul(tp, ag.Transpose(tp, in[0], 0, 1), ag.Transpose(tp, in[1], 0, 1))
			}},
		{name: "A·Aᵀ", inputs: ts{awayFromZero(r, 3, 4)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.MatMul(tp, in[0], ag.Transpose(tp, in[0], 0, 1)) }},
		{name: "const B", f: binary(ag.MatMul), inputs: ts{awayFromZero(r, 3, 4), awayFromZero(r, 4, 2)},
			opts: gradcheck.Options{Const: []int{1}}},
		{name: "batch (2,3,4)x(2,4,5)", f: binary(ag.BatchMatMul), inputs: ts{awayFromZero(r, 2, 3, 4), awayFromZero(r, 2, 4, 5)}},
		{name: "batch (3,2,4)x(1,4,5)", f: binary(ag.BatchMatMul), inputs: ts{awayFromZero(r, 3, 2, 4), awayFromZero(r, 1, 4, 5)}},
		{name: "batch (1,2,4)x(3,4,5)", f: binary(ag.BatchMatMul), inputs: ts{awayFromZero(r, 1, 2, 4), awayFromZero(r, 3, 4, 5)}},
		{name: "batch (1,2,3)x(1,3,2)", f: binary(ag.BatchMatMul), inputs: ts{awayFromZero(r, 1, 2, 3), awayFromZero(r, 1, 3, 2)}},
		{name: "batch X·Xᵀ", inputs: ts{awayFromZero(r, 2, 3, 4)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.BatchMatMul(tp, in[0], ag.Transpose(tp, in[0], 1, 2)) }},
	}
	runCases(t, cases)
}

func TestGradReduce(t *testing.T) {
	r := rng(4)
	var cases []opCase
	for _, axis := range []int{0, 1, 2, -1} {
		for _, keep := range []bool{false, true} {
			name := func(op string) string {
				return op + " axis " + itoa(axis) + map[bool]string{true: " keep", false: ""}[keep]
			}
			cases = append(cases,
				opCase{name: name("Sum"), inputs: ts{awayFromZero(r, 2, 3, 4)},
					f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Sum(tp, in[0], axis, keep) }},
				opCase{name: name("Mean"), inputs: ts{awayFromZero(r, 2, 3, 4)},
					f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Mean(tp, in[0], axis, keep) }},
				opCase{name: name("Max"), inputs: ts{distinct(r, 2, 3, 4)},
					f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Max(tp, in[0], axis, keep) }},
			)
		}
	}
	cases = append(cases,
		opCase{name: "Sum size-1 axis", inputs: ts{awayFromZero(r, 3, 1, 2)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Sum(tp, in[0], 1, false) }},
		opCase{name: "Max size-1 axis", inputs: ts{distinct(r, 3, 1)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Max(tp, in[0], 1, true) }},
		opCase{name: "Sum 1-d", inputs: ts{awayFromZero(r, 5)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Sum(tp, in[0], 0, false) }},
		opCase{name: "SumAll", f: unary(ag.SumAll), inputs: ts{awayFromZero(r, 2, 3)}},
		opCase{name: "MeanAll", f: unary(ag.MeanAll), inputs: ts{awayFromZero(r, 2, 3, 2)}},
		opCase{name: "SumAll scalar", f: unary(ag.SumAll), inputs: ts{awayFromZero(r)}},
		opCase{name: "MeanAll strided", f: transposed(ag.MeanAll), inputs: ts{awayFromZero(r, 3, 2)}},
		opCase{name: "Sum strided", inputs: ts{awayFromZero(r, 3, 4)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Sum(tp, ag.Transpose(tp, in[0], 0, 1), 1, false) }},
	)
	runCases(t, cases)
}

func TestGradShape(t *testing.T) {
	r := rng(5)
	x := func() ts { return ts{awayFromZero(r, 2, 3, 4)} }
	// Multiplying by a fixed pattern makes every output element's weight
	// distinct, so a gradient routed to the wrong element is caught.
	cases := []opCase{
		{name: "Reshape", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Reshape(tp, in[0], 6, 4) }},
		{name: "Reshape -1", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Reshape(tp, in[0], 4, -1) }},
		{name: "Reshape of view", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var {
			return ag.Reshape(tp, ag.Transpose(tp, in[0], 0, 2), -1)
		}},
		{name: "Transpose", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Transpose(tp, in[0], 0, 2) }},
		{name: "Transpose negative", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Transpose(tp, in[0], -1, -2) }},
		{name: "Permute", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Permute(tp, in[0], 2, 0, 1) }},
		{name: "Permute then Exp", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var {
			return ag.Exp(tp, ag.Permute(tp, in[0], 1, 2, 0))
		}},
		{name: "Slice axis 1", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Slice(tp, in[0], 1, 1, 3) }},
		{name: "Slice axis -1 empty", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Slice(tp, in[0], -1, 2, 2) }},
		{name: "Slice twice overlapping", inputs: x(), f: func(tp *ag.Tape, in ins) *ag.Var {
			return ag.Add(tp, ag.Slice(tp, in[0], 2, 0, 3), ag.Slice(tp, in[0], 2, 1, 4))
		}},
		{name: "Concat axis 0", inputs: ts{awayFromZero(r, 2, 3), awayFromZero(r, 1, 3), awayFromZero(r, 3, 3)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Concat(tp, 0, in...) }},
		{name: "Concat axis 1", inputs: ts{awayFromZero(r, 2, 3), awayFromZero(r, 2, 1)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Concat(tp, 1, in...) }},
		{name: "Concat same var", inputs: ts{awayFromZero(r, 2, 3), awayFromZero(r, 2, 3)},
			f: func(tp *ag.Tape, in ins) *ag.Var {
				return ag.Concat(tp, -2, in[0], in[1], in[0])
			}},
		{name: "Concat then Mul", inputs: ts{awayFromZero(r, 2, 3), awayFromZero(r, 2, 3)},
			f: func(tp *ag.Tape, in ins) *ag.Var {
				c := ag.Concat(tp, 0, in[0], in[1])
				return ag.Mul(tp, c, c)
			}},
		{name: "Concat const", inputs: ts{awayFromZero(r, 2, 3), awayFromZero(r, 2, 3)}, opts: gradcheck.Options{Const: []int{0}},
			f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Concat(tp, 1, in...) }},
	}
	runCases(t, cases)
}

func TestGradSoftmaxNormalize(t *testing.T) {
	r := rng(6)
	var cases []opCase
	ops := []struct {
		name string
		op   func(*ag.Tape, *ag.Var, int) *ag.Var
	}{{"LogSoftmax", ag.LogSoftmax}, {"Softmax", ag.Softmax}, {"L2Normalize", ag.L2Normalize}}
	for _, op := range ops {
		for _, c := range []struct {
			shape []int
			axis  int
		}{{[]int{3, 4}, 1}, {[]int{3, 4}, 0}, {[]int{2, 3, 4}, 1}, {[]int{2, 3, 4}, -1}, {[]int{2, 1}, 1}, {[]int{5}, 0}} {
			cases = append(cases, opCase{name: op.name + " " + shapeName(c.shape) + " axis " + itoa(c.axis),
				inputs: ts{uniform(r, -2, 2, c.shape...)},
				f:      func(tp *ag.Tape, in ins) *ag.Var { return op.op(tp, in[0], c.axis) }})
		}
		cases = append(cases, opCase{name: op.name + " strided", inputs: ts{uniform(r, -2, 2, 4, 3)},
			f: func(tp *ag.Tape, in ins) *ag.Var { return op.op(tp, ag.Transpose(tp, in[0], 0, 1), 1) }})
	}
	// Large logits: the max subtraction keeps them finite.
	big := uniform(r, 80, 90, 2, 5)
	cases = append(cases,
		opCase{name: "LogSoftmax large", inputs: ts{big}, f: func(tp *ag.Tape, in ins) *ag.Var { return ag.LogSoftmax(tp, in[0], 1) }},
		opCase{name: "Softmax large", inputs: ts{big}, f: func(tp *ag.Tape, in ins) *ag.Var { return ag.Softmax(tp, in[0], 1) }},
	)
	runCases(t, cases)
}

// TestGradComposite checks whole expressions: an MLP with softmax
// cross-entropy and an InfoNCE-style contrastive loss.
func TestGradComposite(t *testing.T) {
	r := rng(7)
	const batch, in, hidden, classes = 4, 5, 6, 3
	onehot := tensor.New(batch, classes)
	for i := range batch {
		onehot.Set(1, i, r.IntN(classes))
	}
	mlp := func(tp *ag.Tape, v ins) *ag.Var {
		x, w1, b1, w2, b2, y := v[0], v[1], v[2], v[3], v[4], v[5]
		h := ag.ReLU(tp, ag.Add(tp, ag.MatMul(tp, x, w1), b1))
		logits := ag.Add(tp, ag.MatMul(tp, h, w2), b2)
		nll := ag.Neg(tp, ag.Sum(tp, ag.Mul(tp, ag.LogSoftmax(tp, logits, 1), y), 1, false))
		return ag.MeanAll(tp, nll)
	}
	contrastive := func(tp *ag.Tape, v ins) *ag.Var {
		q := ag.L2Normalize(tp, v[0], 1)
		k := ag.L2Normalize(tp, v[1], 1)
		logits := ag.MulScalar(tp, ag.MatMul(tp, q, ag.Transpose(tp, k, 0, 1)), 1/0.2)
		lp := ag.LogSoftmax(tp, logits, -1)
		eye := ag.Const(tensor.Eye(batch))
		return ag.Neg(tp, ag.MeanAll(tp, ag.Sum(tp, ag.Mul(tp, lp, eye), 1, false)))
	}
	cases := []opCase{
		{name: "MLP cross-entropy", f: mlp, opts: gradcheck.Options{Const: []int{5}, Step: 1e-3},
			inputs: ts{uniform(r, -1, 1, batch, in), uniform(r, -1, 1, in, hidden), uniform(r, -0.1, 0.1, hidden),
				uniform(r, -1, 1, hidden, classes), uniform(r, -0.1, 0.1, classes), onehot}},
		{name: "contrastive", f: contrastive,
			inputs: ts{uniform(r, -1, 1, batch, 8), uniform(r, -1, 1, batch, 8)}},
		{name: "Tanh(Sigmoid(x)·y)/Sqrt(z)", inputs: ts{awayFromZero(r, 2, 3), awayFromZero(r, 3), uniform(r, 0.5, 2, 2, 1)},
			f: func(tp *ag.Tape, v ins) *ag.Var {
				return ag.Div(tp, ag.Tanh(tp, ag.Mul(tp, ag.Sigmoid(tp, v[0]), v[1])), ag.Sqrt(tp, v[2]))
			}},
	}
	runCases(t, cases)
}

func TestGradCrossEntropy(t *testing.T) {
	r := rng(8)
	ce := func(targets ...int) gradcheck.Func {
		return func(tp *ag.Tape, in ins) *ag.Var { return ag.CrossEntropy(tp, in[0], targets) }
	}
	runCases(t, []opCase{
		{name: "(4,5)", f: ce(0, 4, 2, 2), inputs: ts{uniform(r, -2, 2, 4, 5)}},
		{name: "(1,3)", f: ce(1), inputs: ts{uniform(r, -2, 2, 1, 3)}},
		{name: "one class", f: ce(0, 0), inputs: ts{uniform(r, -2, 2, 2, 1)}},
		{name: "large logits", f: ce(3, 1), inputs: ts{uniform(r, 80, 90, 2, 4)}},
		{name: "strided", inputs: ts{uniform(r, -2, 2, 5, 3)},
			f: func(tp *ag.Tape, in ins) *ag.Var {
				return ag.CrossEntropy(tp, ag.Transpose(tp, in[0], 0, 1), []int{0, 4, 1})
			}},
	})
}

// TestCrossEntropyMatchesComposite compares the fused op with LogSoftmax,
// one-hot pick and mean, on a shape large enough to run in parallel.
func TestCrossEntropyMatchesComposite(t *testing.T) {
	r := rng(11)
	const n, c = 64, 1000
	x := uniform(r, -5, 5, n, c)
	targets := make([]int, n)
	onehot := tensor.New(n, c)
	for i := range targets {
		targets[i] = r.IntN(c)
		onehot.Set(1, i, targets[i])
	}
	a, b := ag.Param(x, "a"), ag.Param(x, "b")
	tp := ag.NewTape()
	fused := ag.CrossEntropy(tp, a, targets)
	comp := ag.Neg(tp, ag.MeanAll(tp, ag.Sum(tp, ag.Mul(tp, ag.LogSoftmax(tp, b, 1), ag.Const(onehot)), 1, false)))
	if d := fused.Value.Item() - comp.Value.Item(); d > 1e-5 || d < -1e-5 {
		t.Fatalf("fused %g, composite %g", fused.Value.Item(), comp.Value.Item())
	}
	if nograd := ag.CrossEntropy(nil, a, targets).Value.Item(); nograd != fused.Value.Item() {
		t.Fatalf("no-grad value %g, recorded %g", nograd, fused.Value.Item())
	}
	tp.Backward(ag.Add(tp, fused, comp))
	if d := tensor.MaxAbsDiff(a.Grad, b.Grad); d > 1e-7 {
		t.Fatalf("gradients differ by %g", d)
	}
}

func runCases(t *testing.T, cases []opCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gradcheck.Assert(t, c.f, c.inputs, c.opts)
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func shapeName(s []int) string { return fmt.Sprint(s) }
