package mpi

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrNoMPI is returned (wrapped) by Init when no MPI library can be opened
// (none of DefaultLibraries, or not DUEL_MPI_LIBRARY's file), e.g.
//
//	mpi: none of libmpi.so.40, libmpi.so.12, libmpich.so.12, libmpi.so can be opened (no MPI library) [dlopen: ...]: install Open MPI (apt-get install openmpi-bin) or set DUEL_MPI_LIBRARY to the MPI library
var ErrNoMPI = errors.New("no MPI library")

// Error is a failed MPI call: the communicator's error handler is
// MPI_ERRORS_RETURN, so MPI reports errors as return codes instead of
// aborting the job, and they come back as *Error values.
type Error struct {
	Func string // the MPI function, e.g. "MPI_Bcast"
	Code int    // the error code it returned
	Msg  string // MPI_Error_string's text for Code, e.g. "MPI_ERR_ROOT: invalid root"
}

// Error returns "mpi: Func: Msg (error code Code)".
func (e *Error) Error() string {
	return fmt.Sprintf("mpi: %s: %s (error code %d)", e.Func, e.Msg, e.Code)
}

// check turns the code r returned by the MPI function fn into an error:
// nil for MPI_SUCCESS, otherwise an *Error with MPI_Error_string's text.
// The caller holds callMu.
func check(fn string, r uintptr) error {
	code := int(int32(r))
	if code == mpiSuccess {
		return nil
	}
	e := &Error{Func: fn, Code: code, Msg: "unknown error"}
	if lib.MPI_Error_string != 0 {
		buf := make([]byte, maxErrorString)
		var n int32
		if callRaw(lib.MPI_Error_string, uintptr(code), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n))) == mpiSuccess {
			if n > 0 && int(n) <= len(buf) {
				buf = buf[:n]
			}
			if s := goString(buf); s != "" {
				e.Msg = s
			}
		}
	}
	return e
}
