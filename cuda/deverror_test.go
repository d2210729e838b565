package cuda

import (
	"errors"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
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
	good := &Backend{g: cudatest.NewHost(), block: 64}
	buf := good.Alloc(4)
	be := &Backend{g: failingGPU{cudatest.NewHost(), oom}, block: 64}
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
