//go:build !windows

package mpi

import "github.com/ebitengine/purego"

// platformError is nil where MPI libraries can be opened.
func platformError() error { return nil }

// dlopen opens the shared library at path (RTLD_NOW | RTLD_GLOBAL: Open
// MPI's plugins resolve symbols of libmpi) and returns its handle.
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// dlsym returns the address of the symbol name in the library h.
func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
