package tensor_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/reference"
)

// fakeDev is a backend whose storage is opaque to package tensor (Host is
// nil, memory hides behind Dev), as a CUDA backend's is. It computes with
// the reference backend. Registering it checks that tensor dispatches every
// operation on device tensors to their backend and never touches host
// storage, and it runs the conformance suite on a device-style backend.
type fakeDev struct{ ref reference.Backend }

type devMem struct{ v []float32 }

func init() { tensor.Register(fakeDev{}) }

func host(b tensor.Buffer) tensor.Buffer {
	if b.Host != nil {
		panic("fakedev: buffer with host memory")
	}
	return tensor.Buffer{Host: b.Dev.(*devMem).v}
}

func hostOp(o tensor.Operand) tensor.Operand { o.Buf = host(o.Buf); return o }

func (fakeDev) Name() string { return "fakedev" }
func (fakeDev) Alloc(n int) tensor.Buffer {
	return tensor.Buffer{Dev: &devMem{make([]float32, n)}}
}
func (f fakeDev) CopyIn(dst tensor.Buffer, off int, src []float32) { f.ref.CopyIn(host(dst), off, src) }
func (f fakeDev) CopyOut(dst []float32, src tensor.Buffer, off int) {
	f.ref.CopyOut(dst, host(src), off)
}
func (f fakeDev) Fill(dst tensor.Operand, v float32) { f.ref.Fill(hostOp(dst), v) }
func (f fakeDev) Unary(op tensor.UnaryOp, dst, src tensor.Operand, p float32) {
	f.ref.Unary(op, hostOp(dst), hostOp(src), p)
}
func (f fakeDev) Binary(op tensor.BinaryOp, dst, a, b tensor.Operand) {
	f.ref.Binary(op, hostOp(dst), hostOp(a), hostOp(b))
}
func (f fakeDev) AddScaled(dst tensor.Operand, alpha float32, x tensor.Operand) {
	f.ref.AddScaled(hostOp(dst), alpha, hostOp(x))
}
func (f fakeDev) Reduce(op tensor.ReduceOp, dst, src tensor.Operand) {
	f.ref.Reduce(op, hostOp(dst), hostOp(src))
}
func (f fakeDev) ArgMax(dst []int, src tensor.Operand, axis int) {
	f.ref.ArgMax(dst, hostOp(src), axis)
}
func (f fakeDev) Gemm(g tensor.GemmArgs) {
	g.A, g.B, g.C = host(g.A), host(g.B), host(g.C)
	f.ref.Gemm(g)
}
func (f fakeDev) Im2Col(dst tensor.Buffer, dstOff int, src tensor.Buffer, srcOff int, g tensor.ConvGeom) {
	f.ref.Im2Col(host(dst), dstOff, host(src), srcOff, g)
}
func (f fakeDev) Col2Im(dst tensor.Buffer, dstOff int, col tensor.Buffer, colOff int, g tensor.ConvGeom) {
	f.ref.Col2Im(host(dst), dstOff, host(col), colOff, g)
}

// TestDeviceDispatch runs tensor operations on the fake device and
// compares them with the CPU.
func TestDeviceDispatch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	x := tensor.RandN(r, 3, 4)
	y := tensor.RandN(r, 4)
	w := tensor.RandN(r, 5, 4)
	const dev = tensor.Device("fakedev:1")
	on := func(a *tensor.Tensor) *tensor.Tensor {
		d, err := a.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		if d.Device() != dev {
			t.Fatalf("To(%s) gave device %s", dev, d.Device())
		}
		return d
	}
	dx, dy, dw := on(x), on(y), on(w)
	tests := []struct {
		name      string
		cpu, fake *tensor.Tensor
	}{
		{"Add", tensor.Add(x, y), tensor.Add(dx, dy)},
		{"Exp", tensor.Exp(x.T()), tensor.Exp(dx.T())},
		{"Sum", tensor.Sum(x, 0, false), tensor.Sum(dx, 0, false)},
		{"SumTo", tensor.SumTo(x, []int{1, 4}), tensor.SumTo(dx, []int{1, 4})},
		{"MatMulNT", tensor.MatMul(x, w.T()), tensor.MatMul(dx, dw.T())},
		{"BatchMatMul", tensor.BatchMatMul(x.Reshape(1, 3, 4), w.T()), tensor.BatchMatMul(dx.Reshape(1, 3, 4), dw.T())},
		{"Concat", tensor.Concat(0, x, w), tensor.Concat(0, dx, dw)},
		{"Stack", tensor.Stack(1, x, x), tensor.Stack(1, dx, dx)},
		{"Clone", x.T().Clone(), dx.T().Clone()},
		{"Reshape", x.T().Reshape(2, 6), dx.T().Reshape(2, 6)},
	}
	for _, tc := range tests {
		if tc.fake.Device() != dev {
			t.Errorf("%s: result on %s, want %s", tc.name, tc.fake.Device(), dev)
		}
		if !tensor.AllClose(tc.fake, tc.cpu, 1e-5, 1e-5) {
			t.Errorf("%s on %s = %v, want %v", tc.name, dev, tc.fake, tc.cpu)
		}
	}
	if a, b := tensor.SumAll(x), tensor.SumAll(dx); float32(a) != float32(b) {
		t.Errorf("SumAll on device = %v, want %v", b, a)
	}
	if a, b := tensor.ArgMax(x, 1), tensor.ArgMax(dx, 1); !slices.Equal(a, b) {
		t.Errorf("ArgMax on device = %v, want %v", b, a)
	}
	d := on(tensor.New(3, 4))
	tensor.AddInto(d, dx, dy)
	d.AddScaledInPlace(2, dx)
	d.ScaleInPlace(0.5)
	d.Set(9, 2, 3)
	want := tensor.MulScalar(tensor.Add(tensor.Add(x, y), tensor.MulScalar(x, 2)), 0.5)
	want.Set(9, 2, 3)
	if !tensor.AllClose(d, want, 1e-5, 1e-6) || d.At(2, 3) != 9 {
		t.Errorf("in-place ops on device = %v, want %v", d, want)
	}
	if got := tensor.Sum(d, 1, false).Slice(0, 0, 1).Item(); got != tensor.Sum(want, 1, false).At(0) {
		t.Errorf("Item on device = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Data of a device tensor did not panic")
		}
	}()
	dx.Data()
}

func TestFromBuffer(t *testing.T) {
	b, err := tensor.Lookup("fakedev")
	if err != nil {
		t.Fatal(err)
	}
	buf := b.Alloc(6)
	b.CopyIn(buf, 0, []float32{1, 2, 3, 4, 5, 6})
	x := tensor.FromBuffer("fakedev:0", buf, 2, 3)
	if x.Backend().Name() != "fakedev" || x.Operand().Buf.Dev == nil {
		t.Fatalf("FromBuffer: backend %s operand %+v", x.Backend().Name(), x.Operand())
	}
	if got := tensor.Sum(x, 1, false); got.At(1) != 15 {
		t.Errorf("Sum of wrapped buffer = %v", got)
	}
}

func TestCatchDeviceError(t *testing.T) {
	oom := errors.New("CUDA_ERROR_OUT_OF_MEMORY: out of memory")
	err := tensor.CatchDeviceError(func() {
		panic(&tensor.DeviceError{Backend: "cuda", Op: "Alloc", Err: oom})
	})
	var de *tensor.DeviceError
	if !errors.As(err, &de) || !errors.Is(err, oom) || err.Error() != "tensor: cuda backend: Alloc: CUDA_ERROR_OUT_OF_MEMORY: out of memory" {
		t.Errorf("CatchDeviceError = %v", err)
	}
	if err := tensor.CatchDeviceError(func() {}); err != nil {
		t.Errorf("CatchDeviceError without panic = %v", err)
	}
	defer func() {
		if r := recover(); r != "shape bug" {
			t.Errorf("other panic became %v", r)
		}
	}()
	tensor.CatchDeviceError(func() { panic("shape bug") })
}
