package mpi

import (
	"errors"
	"fmt"
)

// errWindows says why Init fails on Windows: the bindings know the Open
// MPI and MPICH ABIs of Linux and macOS libraries, not MS-MPI's DLL.
var errWindows = errors.New("data-parallel training over MPI runs on Linux or macOS (mpirun); this Windows build trains in one process")

// platformError is Init's error on Windows, which wraps ErrNoMPI.
func platformError() error { return fmt.Errorf("mpi: %w: %w", ErrNoMPI, errWindows) }

// dlopen fails on Windows (platformError comes first).
func dlopen(string) (uintptr, error) { return 0, errWindows }

// dlsym fails on Windows.
func dlsym(uintptr, string) (uintptr, error) { return 0, errWindows }

// savedSignal is empty on Windows: no MPI library installs handlers.
type savedSignal struct{}

// quietMPISignals has nothing to quiet on Windows.
func quietMPISignals() error { return nil }

// saveSignals has nothing to save on Windows.
func saveSignals() ([]savedSignal, error) { return nil, nil }

// restoreSignals has nothing to put back on Windows.
func restoreSignals([]savedSignal, string) error { return nil }
