package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// failingGPU is a cudatest.Host whose allocations and copies fail with
// the driver error err, as a device out of memory does.
type failingGPU struct {
	*cudatest.Host
	err error
}

func (f failingGPU) Alloc(int) (driver.DevicePtr, error)           { return 0, f.err }
func (f failingGPU) CopyToDevice(driver.DevicePtr, []byte) error   { return f.err }
func (f failingGPU) CopyFromDevice([]byte, driver.DevicePtr) error { return f.err }
func (f failingGPU) Zero(driver.DevicePtr, int) error              { return f.err }

// TestDeviceErrorCaught checks that a failed driver call inside a Backend
// method panics with a *tensor.DeviceError that tensor.CatchDeviceError
// returns as an error wrapping the driver's.
func TestDeviceErrorCaught(t *testing.T) {
	oom := &driver.Error{Op: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Text: "out of memory"}
	good, err := newBackend(cudatest.NewHost(), 64)
	if err != nil {
		t.Fatal(err)
	}
	buf := good.Alloc(4)
	f := failingGPU{cudatest.NewHost(), oom}
	be := &Backend{g: f, mem: NewAllocator(f), block: 64}
	for _, tc := range []struct {
		op string
		f  func()
	}{
		{"Alloc", func() { be.Alloc(16) }},
		{"CopyIn", func() { be.CopyIn(buf, 0, []float32{1, 2}) }},
		{"CopyOut", func() { be.CopyOut(make([]float32, 2), buf, 0) }},
		{"Gemm", func() { be.Gemm(tensor.GemmArgs{M: 65535*64 + 1, N: 1, K: 1, Batch: 1}) }},
	} {
		err := tensor.CatchDeviceError(tc.f)
		var de *tensor.DeviceError
		if !errors.As(err, &de) || de.Backend != "cuda" || de.Op != tc.op {
			t.Errorf("%s: CatchDeviceError = %v, want a *tensor.DeviceError of cuda %s", tc.op, err, tc.op)
			continue
		}
		if tc.op != "Gemm" && !driver.IsCode(err, 2) {
			t.Errorf("%s: %v does not wrap the driver's CUDA_ERROR_OUT_OF_MEMORY", tc.op, err)
		}
	}
}

// asyncGPU is a cudatest.Host whose launches of kernel fail as a kernel
// does on a device: the launch returns nil, and the failure (sticky, as
// the driver's) is reported by every later call that waits.
type asyncGPU struct {
	*cudatest.Host
	kernel string
	fault  *error
}

func (a asyncGPU) Launch(m *kc.Module, kernel string, cfg kc.Config, args ...any) error {
	if kernel == a.kernel {
		*a.fault = &driver.Error{Op: "cuStreamSynchronize", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Text: "an illegal memory access was encountered"}
		return nil
	}
	return a.Host.Launch(m, kernel, cfg, args...)
}

func (a asyncGPU) CopyFromDevice(dst []byte, src driver.DevicePtr) error {
	if *a.fault != nil {
		return *a.fault
	}
	return a.Host.CopyFromDevice(dst, src)
}

func (a asyncGPU) Synchronize() error { return *a.fault }

// TestAsyncFailureReported checks that a kernel failing after its launch
// returned is reported by the next call that waits for the device (CopyOut,
// ArgMax, Synchronize) as a *tensor.DeviceError of that call, wrapping the
// driver's error and naming the operations queued since the last wait.
func TestAsyncFailureReported(t *testing.T) {
	for _, tc := range []struct {
		op   string
		wait func(be *Backend, x tensor.Operand) error
	}{
		{"CopyOut", func(be *Backend, x tensor.Operand) error {
			return tensor.CatchDeviceError(func() { be.CopyOut(make([]float32, 4), x.Buf, 0) })
		}},
		{"ArgMax", func(be *Backend, x tensor.Operand) error {
			return tensor.CatchDeviceError(func() { be.ArgMax(make([]int, 2), x, 1) })
		}},
		{"Synchronize", func(be *Backend, _ tensor.Operand) error { return be.Synchronize() }},
	} {
		t.Run(tc.op, func(t *testing.T) {
			var fault error
			g := asyncGPU{cudatest.NewHost(), "sgemm_f32", &fault}
			be, err := newBackend(g, 64)
			if err != nil {
				t.Fatal(err)
			}
			x := tensor.Operand{Buf: be.Alloc(4), Shape: []int{2, 2}, Strides: []int{2, 1}}
			if err := be.Synchronize(); err != nil {
				t.Fatal(err)
			}
			be.Fill(x, 1)
			if err := tensor.CatchDeviceError(func() {
				be.Gemm(tensor.GemmArgs{M: 2, N: 2, K: 2, Alpha: 1, A: x.Buf, B: x.Buf, C: x.Buf, LDA: 2, LDB: 2, LDC: 2, Batch: 1})
			}); err != nil {
				t.Fatalf("Gemm reported %v at its launch, want the failure at the next wait", err)
			}
			be.Binary(tensor.OpAdd, x, x, x)
			err = tc.wait(be, x)
			var de *tensor.DeviceError
			if !errors.As(err, &de) || de.Op != tc.op || !driver.IsCode(err, 700) {
				t.Fatalf("%s after a failed kernel: %v, want a *tensor.DeviceError of %s wrapping CUDA_ERROR_ILLEGAL_ADDRESS", tc.op, err, tc.op)
			}
			if msg := err.Error(); !strings.Contains(msg, "queued since the last wait: Fill, Gemm, Binary") {
				t.Errorf("error %q does not name the operations queued since the last wait (Fill, Gemm, Binary)", msg)
			}
		})
	}
}
