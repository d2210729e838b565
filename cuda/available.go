package cuda

import (
	"errors"
	"fmt"
	"sync"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/tensor"
)

// minCapability is the lowest compute capability the embedded PTX targets
// (sm_60).
const minCapability = 60

// minDriver is the oldest driver API version that JIT-compiles the
// embedded PTX (ISA 7.8, CUDA 11.8), as cuDriverGetVersion reports it.
const minDriver = 11080

// Available reports whether a usable CUDA device exists: nil, or an error
// that says why not and ends with "use --device cpu", e.g.
//
//	cuda: libcuda.so.1 not found (no NVIDIA driver) [dlopen: ...]: use --device cpu
//	cuda: no usable GPU (cuda: cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)): use --device cpu
//
// The check runs once per process (it opens the driver library and device
// 0's primary context), on the first call rather than at import, so that
// programs that never ask pay nothing. When the device is usable, the first
// call also registers the backend "cuda" in package tensor: call Available
// before creating tensors on "cuda:0".
func Available() error { return register() }

// register opens device 0 and registers its backend, once.
var register = sync.OnceValue(func() error {
	b, err := NewBackend()
	if err != nil {
		return err
	}
	tensor.Register(b)
	registered = b
	attachEnvProfile(b)
	return nil
})

// registered is the backend register registered (nil before, or without a
// usable device).
var registered *Backend

// Registered returns the backend registered as "cuda" (calling Available
// first), for its memory counters, EmptyCache and Synchronize, or the
// error of Available.
func Registered() (*Backend, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	return registered, nil
}

// defaultDevice opens device 0 once (and profiles it from then on under
// DUEL_CUDA_PROFILE=1).
var defaultDevice = sync.OnceValues(func() (*Device, error) {
	d, err := Open(0)
	if err == nil {
		startEnvProfile(d)
	}
	return d, err
})

// Default returns device 0, opened once per process, or the error of
// Available.
func Default() (*Device, error) { return defaultDevice() }

// unusable wraps a driver error into the error Available returns.
func unusable(err error) error {
	if errors.Is(err, driver.ErrNoDriver) {
		return err
	}
	return fmt.Errorf("cuda: no usable GPU (%w): use --device cpu", err)
}
