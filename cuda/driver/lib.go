package driver

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
)

// libName is the driver library, installed by the NVIDIA driver (not by the
// CUDA toolkit).
const libName = "libcuda.so.1"

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
	cuMemAlloc                uintptr
	cuMemFree                 uintptr
	cuMemcpyHtoD              uintptr
	cuMemcpyDtoH              uintptr
	cuMemcpyDtoD              uintptr
	cuMemsetD8                uintptr
	cuLaunchKernel            uintptr
	cuStreamSynchronize       uintptr
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
	{&lib.cuMemAlloc, "cuMemAlloc_v2"},
	{&lib.cuMemFree, "cuMemFree_v2"},
	{&lib.cuMemcpyHtoD, "cuMemcpyHtoD_v2"},
	{&lib.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
	{&lib.cuMemcpyDtoD, "cuMemcpyDtoD_v2"},
	{&lib.cuMemsetD8, "cuMemsetD8_v2"},
	{&lib.cuLaunchKernel, "cuLaunchKernel"},
	{&lib.cuStreamSynchronize, "cuStreamSynchronize"},
	{&lib.cuGetErrorName, "cuGetErrorName"},
	{&lib.cuGetErrorString, "cuGetErrorString"},
}

// loadOnce opens the library and initialises the driver once per process;
// its result is the error every later call returns.
var loadOnce = sync.OnceValue(func() error { return load(libName) })

// Load opens libcuda.so.1, binds the driver functions and calls cuInit. It
// does the work once; later calls return the first result. Without a driver
// the error wraps ErrNoDriver; with a driver but no usable device it is the
// driver's *Error (CUDA_ERROR_NO_DEVICE, ...).
func Load() error { return loadOnce() }

// load is Load for a given library path (tests use a missing one).
func load(path string) error {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		if path == libName {
			return fmt.Errorf("%w [dlopen: %v]", ErrNoDriver, err)
		}
		return fmt.Errorf("cuda: %s not found (no NVIDIA driver): use --device cpu [dlopen: %v]", path, err)
	}
	for _, s := range symbols {
		p, err := purego.Dlsym(h, s.name)
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
