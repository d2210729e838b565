package driver

import (
	"fmt"
	"os"
	"sync"

	"github.com/ebitengine/purego"
)

// EnvLibrary is the environment variable that names another driver library
// to open instead of DefaultLibrary: a path such as
// /usr/lib/wsl/lib/libcuda.so.1, or a file name for the dynamic loader's
// search.
const EnvLibrary = "DUEL_CUDA_DRIVER"

// Library returns the driver library Load opens, and whether it comes
// from DUEL_CUDA_DRIVER: that variable's value when it is set and not
// empty, else DefaultLibrary. It is the one place that reads the variable.
func Library() (path string, fromEnv bool) {
	if p := os.Getenv(EnvLibrary); p != "" {
		return p, true
	}
	return DefaultLibrary, false
}

// lib holds the addresses of the bound driver functions. It is filled once
// by Load and read-only afterwards.
var lib struct {
	cuInit                    uintptr
	cuDriverGetVersion        uintptr
	cuDeviceGet               uintptr
	cuDeviceGetCount          uintptr
	cuDeviceGetAttribute      uintptr
	cuDeviceGetName           uintptr
	cuDeviceTotalMem          uintptr
	cuDevicePrimaryCtxRetain  uintptr
	cuDevicePrimaryCtxRelease uintptr
	cuCtxCreate               uintptr
	cuCtxDestroy              uintptr
	cuCtxSetCurrent           uintptr
	cuCtxSynchronize          uintptr
	cuModuleLoadData          uintptr
	cuModuleUnload            uintptr
	cuModuleGetFunction       uintptr
	cuFuncSetAttribute        uintptr
	cuMemAlloc                uintptr
	cuMemFree                 uintptr
	cuMemcpyHtoD              uintptr
	cuMemcpyDtoH              uintptr
	cuMemcpyDtoD              uintptr
	cuMemsetD8                uintptr
	cuLaunchKernel            uintptr
	cuStreamSynchronize       uintptr
	cuStreamCreate            uintptr
	cuStreamDestroy           uintptr
	cuMemcpyHtoDAsync         uintptr
	cuMemcpyDtoHAsync         uintptr
	cuMemsetD8Async           uintptr
	cuMemHostAlloc            uintptr
	cuMemFreeHost             uintptr
	cuEventCreate             uintptr
	cuEventDestroy            uintptr
	cuEventRecord             uintptr
	cuEventSynchronize        uintptr
	cuEventElapsedTime        uintptr
	cuGetErrorName            uintptr
	cuGetErrorString          uintptr
}

// symbols lists each bound function with its exported name (the _v2 names
// are the ones current drivers export for the 64-bit API).
var symbols = []struct {
	dst  *uintptr
	name string
}{
	{&lib.cuInit, "cuInit"},
	{&lib.cuDriverGetVersion, "cuDriverGetVersion"},
	{&lib.cuDeviceGet, "cuDeviceGet"},
	{&lib.cuDeviceGetCount, "cuDeviceGetCount"},
	{&lib.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
	{&lib.cuDeviceGetName, "cuDeviceGetName"},
	{&lib.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
	{&lib.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
	{&lib.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
	{&lib.cuCtxCreate, "cuCtxCreate_v2"},
	{&lib.cuCtxDestroy, "cuCtxDestroy_v2"},
	{&lib.cuCtxSetCurrent, "cuCtxSetCurrent"},
	{&lib.cuCtxSynchronize, "cuCtxSynchronize"},
	{&lib.cuModuleLoadData, "cuModuleLoadData"},
	{&lib.cuModuleUnload, "cuModuleUnload"},
	{&lib.cuModuleGetFunction, "cuModuleGetFunction"},
	{&lib.cuFuncSetAttribute, "cuFuncSetAttribute"},
	{&lib.cuMemAlloc, "cuMemAlloc_v2"},
	{&lib.cuMemFree, "cuMemFree_v2"},
	{&lib.cuMemcpyHtoD, "cuMemcpyHtoD_v2"},
	{&lib.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
	{&lib.cuMemcpyDtoD, "cuMemcpyDtoD_v2"},
	{&lib.cuMemsetD8, "cuMemsetD8_v2"},
	{&lib.cuLaunchKernel, "cuLaunchKernel"},
	{&lib.cuStreamSynchronize, "cuStreamSynchronize"},
	{&lib.cuStreamCreate, "cuStreamCreate"},
	{&lib.cuStreamDestroy, "cuStreamDestroy_v2"},
	{&lib.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
	{&lib.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
	{&lib.cuMemsetD8Async, "cuMemsetD8Async"},
	{&lib.cuMemHostAlloc, "cuMemHostAlloc"},
	{&lib.cuMemFreeHost, "cuMemFreeHost"},
	{&lib.cuEventCreate, "cuEventCreate"},
	{&lib.cuEventDestroy, "cuEventDestroy_v2"},
	{&lib.cuEventRecord, "cuEventRecord"},
	{&lib.cuEventSynchronize, "cuEventSynchronize"},
	{&lib.cuEventElapsedTime, "cuEventElapsedTime"},
	{&lib.cuGetErrorName, "cuGetErrorName"},
	{&lib.cuGetErrorString, "cuGetErrorString"},
}

// loadOnce opens the library and initialises the driver once per process;
// its result is the error every later call returns.
var loadOnce = sync.OnceValue(func() error { return load(Library()) })

// Load opens the driver library (Library: DefaultLibrary unless
// DUEL_CUDA_DRIVER names another), binds the driver functions and calls
// cuInit. It does the work once; later calls return the first result.
// Without a driver the error wraps ErrNoDriver and ends with the advice
// "use --device cpu"; with a driver but no usable device it is the
// driver's *Error (CUDA_ERROR_NO_DEVICE, ...).
func Load() error { return loadOnce() }

// load is Load for the library path, which came from DUEL_CUDA_DRIVER when
// fromEnv (tests pass a missing one).
func load(path string, fromEnv bool) error {
	h, err := openLibrary(path)
	if err != nil {
		if fromEnv {
			return fmt.Errorf("cuda: %s=%s not found (%w) [dlopen: %v]: point %s at %s or unset it, or use --device cpu",
				EnvLibrary, path, ErrNoDriver, err, EnvLibrary, DefaultLibrary)
		}
		return fmt.Errorf("cuda: %s not found (%w) [dlopen: %v]: use --device cpu", path, ErrNoDriver, err)
	}
	for _, s := range symbols {
		p, err := symbol(h, s.name)
		if err != nil {
			*s.dst = 0
			return fmt.Errorf("cuda: %s has no %s (driver too old?): %v", path, s.name, err)
		}
		*s.dst = p
	}
	return check("cuInit", callRaw(lib.cuInit, 0))
}

// callRaw calls the C function at fn with integer or pointer arguments and
// returns its first result register (the CUresult). Pointer arguments
// converted to uintptr in the call expression are moved to the heap and kept
// alive for the call (go:uintptrescapes), so the C side may write through
// them.
//
//go:uintptrescapes
func callRaw(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
