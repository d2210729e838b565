//go:build !windows

package driver

import "github.com/ebitengine/purego"

// DefaultLibrary is the driver library Load opens, installed by the NVIDIA
// driver (not by the CUDA toolkit) and found by the dynamic loader.
const DefaultLibrary = "libcuda.so.1"

// openLibrary opens the shared library at path (dlopen, RTLD_NOW |
// RTLD_GLOBAL) and returns its handle.
func openLibrary(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// symbol returns the address of the function name in the library h.
func symbol(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
