//go:build !windows

package cudatest

import "github.com/ebitengine/purego"

// emulatorSupported is true where the emulator library can be built and
// loaded (a shared object through dlopen).
const emulatorSupported = true

// openLocal opens the shared library at path (RTLD_NOW | RTLD_LOCAL).
func openLocal(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// symbol returns the address of the function name in the library h.
func symbol(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
