package nn

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

func TestLinearGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, bias := range []bool{true, false} {
		l := NewLinear(5, 3, bias, r)
		x := autograd.NewVar(randTensor(r, 4, 5), true)
		ins := []*autograd.Var{x, l.Weight}
		if bias {
			ins = append(ins, l.Bias)
		}
		checkGrad(t, "linear", func(tp *autograd.Tape) *autograd.Var { return l.Forward(tp, x) }, ins...)
	}
}

func TestReluGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 3))
	x := autograd.NewVar(randTensor(r, 3, 7), true)
	checkGrad(t, "relu", func(tp *autograd.Tape) *autograd.Var { return Relu(tp, x) }, x)
	a := autograd.NewVar(randTensor(r, 2, 9), true)
	b := autograd.NewVar(randTensor(r, 2, 9), true)
	checkGrad(t, "addrelu", func(tp *autograd.Tape) *autograd.Var { return AddRelu(tp, a, b) }, a, b)
}

func TestBatchNormGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 4))
	for _, tc := range []struct {
		name   string
		shape  []int
		splits int
		train  bool
		sync   bool // synchronised pass (over one process: the all-reduce is the identity)
	}{
		{"bn1d-train", []int{6, 3}, 1, true, false},
		{"bn1d-eval", []int{6, 3}, 1, false, false},
		{"bn2d-train", []int{4, 3, 2, 3}, 1, true, false},
		{"bn2d-eval", []int{4, 3, 2, 3}, 1, false, false},
		{"bn2d-ghost", []int{4, 3, 2, 2}, 2, true, false},
		{"bn2d-sync", []int{4, 3, 2, 3}, 1, true, true},
	} {
		bn := NewBatchNorm(tc.shape[1])
		bn.Splits = tc.splits
		if tc.sync {
			bn.Sync = func([]float32) error { return nil }
		}
		bn.SetTraining(tc.train)
		NormalInit(bn.Weight.Value, 1, r)
		NormalInit(bn.Bias.Value, 1, r)
		NormalInit(bn.RunningMean.Tensor, 1, r)
		UniformInit(bn.RunningVar.Tensor, 1, r)
		for i, v := range bn.RunningVar.Tensor.Data() {
			bn.RunningVar.Tensor.Data()[i] = v + 1.5
		}
		x := autograd.NewVar(randTensor(r, tc.shape...), true)
		checkGrad(t, tc.name, func(tp *autograd.Tape) *autograd.Var { return bn.Forward(tp, x) }, x, bn.Weight, bn.Bias)
	}
}

func TestSequentialNames(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 5))
	s := NewSequential(NewLinear(4, 8, true, r), NewBatchNorm1d(8), NewReLU(), NewLinear(8, 2, false, r))
	want := []string{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked", "3.weight"}
	got := StateDictOf(s).Names()
	if len(got) != len(want) {
		t.Fatalf("state dict names %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("state dict names %v, want %v", got, want)
		}
	}
	if n := len(NamedParameters(s)); n != 5 {
		t.Errorf("%d parameters, want 5", n)
	}
	if n := len(NamedBuffers(s)); n != 3 {
		t.Errorf("%d buffers, want 3", n)
	}
	x := autograd.NewVar(randTensor(r, 5, 4), false)
	tp := autograd.NewTape()
	y := s.Forward(tp, x)
	if sh := y.Value.Shape(); sh[0] != 5 || sh[1] != 2 {
		t.Fatalf("output shape %v", sh)
	}
	tp.BackwardWith(y, randTensor(r, 5, 2))
	for _, p := range NamedParameters(s) {
		if p.Var.Grad == nil {
			t.Errorf("%s: no gradient", p.Name)
		}
	}
}

func TestConv2dGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 6))
	for _, tc := range []struct {
		in, out, k, s, p, h, w int
		bias                   bool
	}{
		{2, 3, 3, 1, 1, 5, 4, true},
		{2, 3, 3, 2, 1, 5, 6, false},
		{3, 2, 1, 1, 0, 3, 3, true},
		{3, 2, 1, 2, 0, 5, 5, false},
		{1, 2, 7, 2, 3, 9, 8, false},
		{2, 2, 2, 2, 0, 4, 5, true},
	} {
		c := NewConv2d(tc.in, tc.out, tc.k, tc.s, tc.p, tc.bias, r)
		x := autograd.NewVar(randTensor(r, 2, tc.in, tc.h, tc.w), true)
		ins := []*autograd.Var{x, c.Weight}
		if tc.bias {
			ins = append(ins, c.Bias)
		}
		checkGrad(t, "conv2d", func(tp *autograd.Tape) *autograd.Var { return c.Forward(tp, x) }, ins...)
	}
}

func TestPoolGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 7))
	x := autograd.NewVar(randTensor(r, 2, 3, 7, 6), true)
	mp := NewMaxPool2d(3, 2, 1)
	checkGrad(t, "maxpool", func(tp *autograd.Tape) *autograd.Var { return mp.Forward(tp, x) }, x)
	for _, o := range [][2]int{{1, 1}, {3, 2}, {7, 6}} {
		ap := NewAdaptiveAvgPool2d(o[0], o[1])
		checkGrad(t, "avgpool", func(tp *autograd.Tape) *autograd.Var { return ap.Forward(tp, x) }, x)
	}
	f := NewFlatten()
	checkGrad(t, "flatten", func(tp *autograd.Tape) *autograd.Var { return f.Forward(tp, x) }, x)
}

// cnhwVar returns a variable holding random values stored channel-major.
func cnhwVar(r *rand.Rand, shape ...int) *autograd.Var {
	t := newLayout(true, shape...)
	copy(storage(t), inLayout(randTensor(r, shape...), true))
	return autograd.NewVar(t, true)
}

// TestChannelMajorGrad checks every layer on channel-major inputs (the
// layout Conv2d produces) against finite differences, and its forward
// against the same input stored NCHW.
func TestChannelMajorGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 8))
	bn := NewBatchNorm2d(3)
	NormalInit(bn.Weight.Value, 1, r)
	ghost := NewBatchNorm2d(3)
	ghost.Splits = 2
	layers := map[string]Module{
		"conv3x3":    NewConv2d(3, 4, 3, 1, 1, true, r),
		"conv3x3-s2": NewConv2d(3, 2, 3, 2, 1, false, r),
		"conv1x1":    NewConv2d(3, 5, 1, 1, 0, false, r),
		"conv5x5-p1": NewConv2d(3, 2, 5, 1, 1, false, r),
		"bn":         bn,
		"ghost-bn":   ghost,
		"relu":       NewReLU(),
		"maxpool":    NewMaxPool2d(3, 2, 1),
		"avgpool":    NewAdaptiveAvgPool2d(1, 1),
		"flatten":    NewFlatten(),
	}
	names := slices.Sorted(maps.Keys(layers))
	for _, name := range names {
		m := layers[name]
		x := cnhwVar(r, 4, 3, 6, 5)
		if name == "maxpool" {
			// Distinct values 0.05 apart: no near-ties for finite differences.
			d := storage(x.Value)
			for i, j := range r.Perm(len(d)) {
				d[i] = 0.05 * float32(j-len(d)/2)
			}
		}
		if name == "relu" {
			for i, v := range storage(x.Value) {
				if v > -0.1 && v < 0.1 {
					storage(x.Value)[i] = v + 0.3
				}
			}
		}
		if !channelMajor(x.Value) {
			t.Fatal("cnhwVar is not channel-major")
		}
		checkGrad(t, name, func(tp *autograd.Tape) *autograd.Var { return m.Forward(tp, x) }, append([]*autograd.Var{x}, Parameters(m)...)...)
		a := m.Forward(nil, x).Value.Contiguous().Data()
		b := m.Forward(nil, autograd.NewVar(x.Value.Contiguous(), false)).Value.Contiguous().Data()
		for i := range a {
			if d := a[i] - b[i]; d > 1e-5 || d < -1e-5 {
				t.Errorf("%s: channel-major and NCHW inputs differ at %d: %g vs %g", name, i, a[i], b[i])
				break
			}
		}
	}
	a, b := cnhwVar(r, 2, 3, 4, 4), autograd.NewVar(randTensor(r, 2, 3, 4, 4), true)
	// Keep a+b away from the kink of relu, where finite differences fail.
	ad, bd := inLayout(a.Value, false), b.Value.Data()
	for i := range bd {
		if s := ad[i] + bd[i]; s > -0.1 && s < 0.1 {
			bd[i] += 0.3
		}
	}
	checkGrad(t, "addrelu-mixed", func(tp *autograd.Tape) *autograd.Var { return AddRelu(tp, a, b) }, a, b)
	checkGrad(t, "addrelu-mixed2", func(tp *autograd.Tape) *autograd.Var { return AddRelu(tp, b, a) }, a, b)
}

func TestBatchNormReLUGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 10))
	for _, train := range []bool{true, false} {
		for _, cm := range []bool{false, true} {
			bn := NewBatchNorm2d(3)
			bn.SetTraining(train)
			NormalInit(bn.Weight.Value, 1, r)
			NormalInit(bn.Bias.Value, 0.5, r)
			x := autograd.NewVar(randTensor(r, 4, 3, 3, 2), true)
			if cm {
				x = cnhwVar(r, 4, 3, 3, 2)
			}
			// Keep outputs away from the ReLU kink.
			for tries := 0; tries < 50; tries++ {
				y := storage(bn.Forward(nil, x).Value)
				bad := -1
				for i, v := range y {
					if v > -0.05 && v < 0.05 {
						bad = i
						break
					}
				}
				if bad < 0 {
					break
				}
				storage(x.Value)[bad] += 0.2
			}
			name := fmt.Sprintf("bnrelu-train=%v-cm=%v", train, cm)
			checkGrad(t, name, func(tp *autograd.Tape) *autograd.Var { return bn.ForwardReLU(tp, x) }, x, bn.Weight, bn.Bias)
			// Same values as BatchNorm then ReLU, and accumulation into an
			// existing gradient.
			tp := autograd.NewTape()
			a := bn.ForwardReLU(tp, x)
			b := Relu(tp, bn.Forward(tp, x))
			if !equal(storage(a.Value), storage(b.Value)) {
				t.Errorf("%s: ForwardReLU differs from Forward+Relu", name)
			}
			x.Grad = nil
			tp.BackwardWith(a, tensor.Ones(a.Value.Shape()...))
			g1 := append([]float32(nil), storage(x.Grad)...)
			tp = autograd.NewTape()
			a = bn.ForwardReLU(tp, x)
			tp.BackwardWith(a, tensor.Ones(a.Value.Shape()...))
			for i, v := range storage(x.Grad) {
				if d := v - 2*g1[i]; d > 1e-5 || d < -1e-5 {
					t.Fatalf("%s: accumulated gradient %g, want %g", name, v, 2*g1[i])
				}
			}
		}
	}
}

func TestBatchNormAddReLUGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 11))
	for _, cm := range []bool{false, true} {
		bn := NewBatchNorm2d(3)
		NormalInit(bn.Weight.Value, 1, r)
		x := cnhwVar(r, 4, 3, 3, 2)
		res := autograd.NewVar(randTensor(r, 4, 3, 3, 2), true)
		if cm {
			res = cnhwVar(r, 4, 3, 3, 2)
		}
		for tries := 0; tries < 100; tries++ {
			y := bn.Forward(nil, x).Value.Contiguous().Data()
			rv := res.Value.Contiguous().Data()
			bad := -1
			for i, v := range y {
				if s := v + rv[i]; s > -0.05 && s < 0.05 {
					bad = i
					break
				}
			}
			if bad < 0 {
				break
			}
			// Move the residual element (bad is an NCHW index).
			if cm {
				n, c, s := 4, 3, 6
				i, ch, j := bad/(c*s), bad/s%c, bad%s
				storage(res.Value)[(ch*n+i)*s+j] += 0.2
			} else {
				res.Value.Data()[bad] += 0.2
			}
		}
		name := fmt.Sprintf("bn-add-relu-cm=%v", cm)
		checkGrad(t, name, func(tp *autograd.Tape) *autograd.Var { return bn.ForwardAddReLU(tp, x, res) }, x, res, bn.Weight, bn.Bias)
		a := bn.ForwardAddReLU(nil, x, res).Value.Contiguous().Data()
		b := AddRelu(nil, bn.Forward(nil, x), res).Value.Contiguous().Data()
		if !equal(a, b) {
			t.Errorf("%s: differs from Forward + AddRelu", name)
		}
	}
}

// TestArenaRelease checks that only whole arena buffers are taken back
// early, never a view of part of one.
func TestArenaRelease(t *testing.T) {
	a := NewArena()
	whole := a.tensor(false, 4, 3)
	a.release(whole.Slice(0, 0, 2)) // a part: must stay in use
	if got := a.get(12); &got[0] == &storage(whole)[0] {
		t.Fatal("a partial view released its whole buffer")
	}
	a.release(whole.Reshape(12)) // the whole buffer under another shape
	if got := a.get(12); &got[0] != &storage(whole)[0] {
		t.Fatal("a whole buffer was not taken back")
	}
	a.release(tensor.New(3)) // not from the arena: ignored
	a.release(nil)
	var nilArena *Arena
	nilArena.release(whole)
}
