package cudatest

import "errors"

// emulatorSupported is false on Windows: the emulator is a shared object
// built by g++ and opened with dlopen.
const emulatorSupported = false

// errNoEmulator is openLocal's and symbol's error on Windows.
var errNoEmulator = errors.New("cudatest: the kernel emulator does not run on Windows")

// openLocal fails on Windows (SkipWithoutEmulator skips first).
func openLocal(string) (uintptr, error) { return 0, errNoEmulator }

// symbol fails on Windows.
func symbol(uintptr, string) (uintptr, error) { return 0, errNoEmulator }
