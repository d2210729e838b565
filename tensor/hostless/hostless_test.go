package hostless_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/backendtest"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// TestConformance runs the backend conformance suite on both registered
// host-less backends.
func TestConformance(t *testing.T) {
	for _, name := range []string{hostless.Name, hostless.FusedName} {
		b, err := tensor.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { backendtest.Run(t, b) })
	}
}

// on moves x to dev, failing the test on error.
func on(t *testing.T, x *tensor.Tensor, dev tensor.Device) *tensor.Tensor {
	t.Helper()
	d, err := x.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	if d.Device() != dev {
		t.Fatalf("To(%s) gave device %s", dev, d.Device())
	}
	return d
}

// back copies x to the host, failing the test on error.
func back(t *testing.T, x *tensor.Tensor) []float32 {
	t.Helper()
	h, err := x.To(tensor.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return h.Contiguous().Data()
}

// bitsEqual reports whether a and b hold the same float32 bit patterns.
func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestSameBitsAsCPU runs tensor operations on the host-less devices and
// checks that they give the CPU's bits (the same kernels compute them).
func TestSameBitsAsCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	x := tensor.RandN(r, 37, 19)
	y := tensor.RandN(r, 19)
	w := tensor.RandN(r, 23, 19)
	img := tensor.RandN(r, 2, 3, 9, 7)
	ops := []struct {
		name string
		f    func(x, y, w, img *tensor.Tensor) *tensor.Tensor
	}{
		{"Add", func(x, y, _, _ *tensor.Tensor) *tensor.Tensor { return tensor.Add(x, y) }},
		{"DivT", func(x, _, _, _ *tensor.Tensor) *tensor.Tensor { return tensor.Div(x.T(), tensor.AddScalar(x.T(), 3)) }},
		{"Exp", func(x, _, _, _ *tensor.Tensor) *tensor.Tensor { return tensor.Exp(x) }},
		{"Sigmoid", func(x, _, _, _ *tensor.Tensor) *tensor.Tensor { return tensor.Sigmoid(x.T()) }},
		{"SumAxis", func(x, _, _, _ *tensor.Tensor) *tensor.Tensor { return tensor.Sum(x, 0, false) }},
		{"MeanKeep", func(x, _, _, _ *tensor.Tensor) *tensor.Tensor { return tensor.Mean(x, 1, true) }},
		{"Max", func(_, _, _, img *tensor.Tensor) *tensor.Tensor { return tensor.Max(img, 2, false) }},
		{"SumTo", func(x, _, _, _ *tensor.Tensor) *tensor.Tensor { return tensor.SumTo(x, []int{1, 19}) }},
		{"MatMulNT", func(x, _, w, _ *tensor.Tensor) *tensor.Tensor { return tensor.MatMul(x, w.T()) }},
		{"BatchMatMul", func(_, _, _, img *tensor.Tensor) *tensor.Tensor {
			a := img.Reshape(6, 9, 7)
			return tensor.BatchMatMul(a, a.Transpose(1, 2))
		}},
		{"Concat", func(x, _, w, _ *tensor.Tensor) *tensor.Tensor { return tensor.Concat(0, x, w) }},
		{"Permute", func(_, _, _, img *tensor.Tensor) *tensor.Tensor { return img.Permute(1, 0, 3, 2).Contiguous() }},
		{"InPlace", func(x, y, _, _ *tensor.Tensor) *tensor.Tensor {
			d := x.Clone()
			d.AddScaledInPlace(-0.25, y)
			d.ScaleInPlace(3)
			tensor.MulInto(d, d, y)
			return d
		}},
		{"Empty", func(x, _, _, _ *tensor.Tensor) *tensor.Tensor { return tensor.Exp(x.Slice(0, 3, 3)) }},
	}
	for _, dev := range []tensor.Device{hostless.Device, hostless.FusedDevice} {
		dx, dy, dw, dimg := on(t, x, dev), on(t, y, dev), on(t, w, dev), on(t, img, dev)
		for _, op := range ops {
			want := op.f(x, y, w, img)
			got := op.f(dx, dy, dw, dimg)
			if got.Device() != dev {
				t.Errorf("%s on %s: result on %s", op.name, dev, got.Device())
				continue
			}
			if !slices.Equal(got.Shape(), want.Shape()) || !bitsEqual(back(t, got), want.Contiguous().Data()) {
				t.Errorf("%s on %s differs from the CPU", op.name, dev)
			}
		}
		if a, b := tensor.ArgMax(x, 1), tensor.ArgMax(dx, 1); !slices.Equal(a, b) {
			t.Errorf("ArgMax on %s = %v, want %v", dev, b, a)
		}
		// A device's SumAll is its Reduce into a float32 element; the CPU's
		// keeps the float64 sum.
		if a, b := tensor.SumAll(x), tensor.SumAll(dx); float32(a) != float32(b) {
			t.Errorf("SumAll on %s = %v, want %v", dev, b, float32(a))
		}
		if a, b := x.At(5, 7), dx.At(5, 7); a != b {
			t.Errorf("At on %s = %v, want %v", dev, b, a)
		}
		z := tensor.ZerosOn(dev, 4, 0, 3)
		if z.Device() != dev || z.Numel() != 0 || len(back(t, z)) != 0 {
			t.Errorf("ZerosOn(%s, 4, 0, 3) = %v", dev, z)
		}
	}
}

// TestHostAccessFails checks that every host access to a host-less tensor
// panics with a *tensor.DeviceError wrapping tensor.ErrNoHostStorage that
// names the operation.
func TestHostAccessFails(t *testing.T) {
	x := on(t, tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3), hostless.Device)
	tests := []struct {
		op string
		f  func()
	}{
		{"Data", func() { x.Data() }},
		{"Storage", func() { x.Storage() }},
		{"Map", func() { tensor.Map(x, func(v float32) float32 { return v }) }},
		{"Data", func() { tensor.Add(x, x).Data() }},
		{"Data", func() { x.T().Contiguous().Data() }},
	}
	for _, tc := range tests {
		err := tensor.CatchDeviceError(tc.f)
		var de *tensor.DeviceError
		if !errors.As(err, &de) || de.Op != tc.op || de.Backend != hostless.Name || !errors.Is(err, tensor.ErrNoHostStorage) {
			t.Errorf("%s of a host-less tensor: error %v, want a *tensor.DeviceError of %s wrapping ErrNoHostStorage", tc.op, err, tc.op)
		}
	}
	if x.Operand().Buf.Host != nil {
		t.Error("a host-less tensor's operand has host storage")
	}
	if !x.SharesStorage(x.Reshape(3, 2)) || x.SharesStorage(x.Clone()) {
		t.Error("SharesStorage does not follow the device handle")
	}
}

// TestForeignBufferFails checks that the backend refuses host memory handed
// to it in place of its handles.
func TestForeignBufferFails(t *testing.T) {
	b, err := tensor.Lookup(hostless.Name)
	if err != nil {
		t.Fatal(err)
	}
	host := tensor.Buffer{Host: make([]float32, 4)}
	dev := b.Alloc(4)
	tests := []struct {
		op string
		f  func()
	}{
		{"CopyIn", func() { b.CopyIn(host, 0, []float32{1}) }},
		{"CopyOut", func() { b.CopyOut(make([]float32, 1), host, 0) }},
		{"Fill", func() { b.Fill(tensor.Operand{Buf: host, Shape: []int{4}, Strides: []int{1}}, 1) }},
		{"AddScaled", func() {
			b.AddScaled(tensor.Operand{Buf: dev, Shape: []int{4}, Strides: []int{1}}, 1, tensor.Operand{Buf: host, Shape: []int{4}, Strides: []int{1}})
		}},
	}
	for _, tc := range tests {
		err := tensor.CatchDeviceError(tc.f)
		var de *tensor.DeviceError
		if !errors.As(err, &de) || de.Op != tc.op {
			t.Errorf("%s with a host buffer: error %v, want a *tensor.DeviceError of %s", tc.op, err, tc.op)
		}
	}
}
