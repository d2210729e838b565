package mpi

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// callMu serialises every MPI call of the process. Init asks for
// MPI_THREAD_SERIALIZED: any thread may call MPI, one at a time. A
// goroutine moves between OS threads, so the calls of even one goroutine
// come from several threads, which MPI_THREAD_FUNNELED would forbid; the
// mutex provides the "one at a time".
var callMu sync.Mutex

// world is the communicator Init returned, nil before the first Init.
// Guarded by callMu.
var world *Comm

// Init initialises MPI (MPI_Init_thread at MPI_THREAD_SERIALIZED) and
// returns the communicator of every rank of the job, MPI_COMM_WORLD, with
// MPI_ERRORS_RETURN as its error handler so failed calls return *Error
// values instead of aborting. It loads the MPI library first (Library);
// without one the error wraps ErrNoMPI.
//
// Before MPI_Init_thread (and before the library is opened, see
// openLibrary) it sets OMPI_MCA_opal_signal and UCX_ERROR_SIGNALS to ""
// unless they are already set, and after each it puts back Go's handlers of
// SIGSEGV, SIGBUS, SIGFPE and SIGILL if they were replaced (see
// quietMPISignals and restoreSignals): those signals are the Go runtime's
// (a nil dereference becomes a panic through its SIGSEGV handler), and a C
// handler in their place prints a stack trace and aborts instead.
//
// Init may be called again: while the communicator is open it returns the
// same one; after its Close it fails (MPI cannot be initialised twice in
// a process). When something else in the process initialised MPI already,
// Init uses it (if its thread level is at least MPI_THREAD_SERIALIZED) and
// Close leaves MPI_Finalize to that owner.
func Init() (*Comm, error) {
	if err := loadLib(); err != nil {
		return nil, err
	}
	callMu.Lock()
	defer callMu.Unlock()
	if world != nil && !world.closed.Load() {
		return world, nil
	}
	var flag int32
	if err := check("MPI_Finalized", callRaw(lib.MPI_Finalized, uintptr(unsafe.Pointer(&flag)))); err != nil {
		return nil, err
	}
	if flag != 0 {
		return nil, errors.New("mpi: Init after MPI_Finalize: MPI cannot be initialised twice in a process")
	}
	if err := check("MPI_Initialized", callRaw(lib.MPI_Initialized, uintptr(unsafe.Pointer(&flag)))); err != nil {
		return nil, err
	}
	own := flag == 0
	var provided int32
	if own {
		if err := quietMPISignals(); err != nil {
			return nil, err
		}
		saved, err := saveSignals()
		if err != nil {
			return nil, err
		}
		initErr := check("MPI_Init_thread", callRaw(lib.MPI_Init_thread, 0, 0, threadSerialized, uintptr(unsafe.Pointer(&provided))))
		restoreErr := restoreSignals(saved, "MPI_Init")
		if initErr != nil {
			return nil, errors.Join(initErr, restoreErr)
		}
		if restoreErr != nil {
			return nil, errors.Join(restoreErr, check("MPI_Finalize", callRaw(lib.MPI_Finalize)))
		}
	} else if err := check("MPI_Query_thread", callRaw(lib.MPI_Query_thread, uintptr(unsafe.Pointer(&provided)))); err != nil {
		return nil, err
	}
	if provided < threadSerialized {
		err := fmt.Errorf("mpi: %s (%s) provides %s, duel needs MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE",
			lib.path, lib.abi.name, threadLevelName(int(provided)))
		if own {
			err = errors.Join(err, check("MPI_Finalize", callRaw(lib.MPI_Finalize)))
		}
		return nil, err
	}
	c := &Comm{h: lib.abi.commWorld, own: own, pending: map[*Request]struct{}{}}
	if err := c.setup(); err != nil {
		if own {
			err = errors.Join(err, check("MPI_Finalize", callRaw(lib.MPI_Finalize)))
		}
		return nil, err
	}
	world = c
	return c, nil
}

// setup sets c's error handler to MPI_ERRORS_RETURN and reads its rank and
// size. The caller holds callMu.
func (c *Comm) setup() error {
	if err := check("MPI_Comm_set_errhandler", callRaw(lib.MPI_Comm_set_errhandler, c.h, lib.abi.errorsReturn)); err != nil {
		return err
	}
	var rank, size int32
	if err := check("MPI_Comm_rank", callRaw(lib.MPI_Comm_rank, c.h, uintptr(unsafe.Pointer(&rank)))); err != nil {
		return err
	}
	if err := check("MPI_Comm_size", callRaw(lib.MPI_Comm_size, c.h, uintptr(unsafe.Pointer(&size)))); err != nil {
		return err
	}
	c.rank, c.size = int(rank), int(size)
	return nil
}

// LibraryVersion loads the MPI library (Library) if needed and returns
// MPI_Get_library_version's text, e.g. "Open MPI v4.1.4, package: Debian
// OpenMPI, ...". It may be called before Init and after Close.
func LibraryVersion() (string, error) {
	if err := loadLib(); err != nil {
		return "", err
	}
	callMu.Lock()
	defer callMu.Unlock()
	buf := make([]byte, maxLibraryVersion)
	var n int32
	if err := check("MPI_Get_library_version", callRaw(lib.MPI_Get_library_version, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)))); err != nil {
		return "", err
	}
	if n > 0 && int(n) <= len(buf) {
		buf = buf[:n]
	}
	return goString(buf), nil
}
