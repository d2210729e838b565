package mpi

import "fmt"

// abi is what differs between the MPI implementations at the binary level:
// the values of the predefined handles and special pointers that mpi.h
// defines. Functions and their signatures are the standard's.
//
// Open MPI's handles are pointers to exported globals (MPI_COMM_WORLD is
// &ompi_mpi_comm_world), so they are looked up in the library; MPICH's
// (and its derivatives', libmpi.so.12) are int constants fixed by its ABI.
// Handles are passed in integer registers, so an MPICH int handle travels
// as the same uintptr as an Open MPI pointer. An MPI_Request is a pointer
// in Open MPI and an int in MPICH: requests are stored in a uint64 of which
// MPICH fills the first 4 bytes, its value on a little-endian machine (every
// Linux target of purego).
type abi struct {
	name string // "Open MPI" or "MPICH"

	commWorld    uintptr // MPI_COMM_WORLD
	float        uintptr // MPI_FLOAT
	double       uintptr // MPI_DOUBLE
	byte         uintptr // MPI_BYTE
	sum          uintptr // MPI_SUM
	errorsReturn uintptr // MPI_ERRORS_RETURN
	inPlace      uintptr // MPI_IN_PLACE: (void *)1 in Open MPI, (void *)-1 in MPICH
	statusIgnore uintptr // MPI_STATUS_IGNORE: NULL in Open MPI, (MPI_Status *)1 in MPICH
}

// Constants with the same value in Open MPI and MPICH.
const (
	mpiSuccess = 0 // MPI_SUCCESS

	// The thread support levels (an enum from 0 in Open MPI's mpi.h,
	// #defines 0 to 3 in MPICH's).
	threadSingle     = 0 // MPI_THREAD_SINGLE
	threadFunneled   = 1 // MPI_THREAD_FUNNELED
	threadSerialized = 2 // MPI_THREAD_SERIALIZED
	threadMultiple   = 3 // MPI_THREAD_MULTIPLE

	// maxErrorString is at least MPI_MAX_ERROR_STRING: 512 in MPICH 4.0.2's
	// mpi.h, 256 in Open MPI's; 1024 leaves room for a larger one.
	maxErrorString = 1024
	// maxLibraryVersion is MPICH's MPI_MAX_LIBRARY_VERSION_STRING (8192),
	// the larger of the two (Open MPI's is 256).
	maxLibraryVersion = 8192
)

// threadLevelName names an MPI_THREAD_* level for messages.
func threadLevelName(l int) string {
	switch l {
	case threadSingle:
		return "MPI_THREAD_SINGLE"
	case threadFunneled:
		return "MPI_THREAD_FUNNELED"
	case threadSerialized:
		return "MPI_THREAD_SERIALIZED"
	case threadMultiple:
		return "MPI_THREAD_MULTIPLE"
	}
	return fmt.Sprintf("thread level %d", l)
}

// mpichABI holds MPICH's handle values, from its mpi.h (unchanged since
// MPICH2 1.x and kept by the MPICH ABI compatibility initiative shared with
// Intel MPI and MVAPICH2).
var mpichABI = abi{
	name:         implMPICH,
	commWorld:    0x44000000,
	float:        0x4c00040a,
	double:       0x4c00080b,
	byte:         0x4c00010d,
	sum:          0x58000003,
	errorsReturn: 0x54000001,
	inPlace:      ^uintptr(0), // (void *)-1
	statusIgnore: 1,
}

// openMPISymbols are the exported globals whose addresses are Open MPI's
// handles.
var openMPISymbols = []struct {
	dst  func(*abi) *uintptr
	name string
}{
	{func(a *abi) *uintptr { return &a.commWorld }, "ompi_mpi_comm_world"},
	{func(a *abi) *uintptr { return &a.float }, "ompi_mpi_float"},
	{func(a *abi) *uintptr { return &a.double }, "ompi_mpi_double"},
	{func(a *abi) *uintptr { return &a.byte }, "ompi_mpi_byte"},
	{func(a *abi) *uintptr { return &a.sum }, "ompi_mpi_op_sum"},
	{func(a *abi) *uintptr { return &a.errorsReturn }, "ompi_mpi_errors_return"},
}

// mpichSymbols are symbols only MPICH's family exports: MPIR_Dup_fn is what
// its mpi.h expands MPI_DUP_FN to, MPIR_Err_create_code its error machinery.
var mpichSymbols = []string{"MPIR_Dup_fn", "MPIR_Err_create_code"}

// detectABI tells the implementation of the library h by the symbols it
// exports (ompi_mpi_comm_world: Open MPI; an MPIR_ symbol: MPICH) and
// returns its handles.
func detectABI(h uintptr) (abi, error) {
	if _, err := dlsym(h, "ompi_mpi_comm_world"); err == nil {
		a := abi{name: implOpenMPI, inPlace: 1, statusIgnore: 0}
		for _, s := range openMPISymbols {
			p, err := dlsym(h, s.name)
			if err != nil {
				return abi{}, fmt.Errorf("the Open MPI library lacks %s: %w", s.name, err)
			}
			*s.dst(&a) = p
		}
		return a, nil
	}
	for _, s := range mpichSymbols {
		if _, err := dlsym(h, s); err == nil {
			return mpichABI, nil
		}
	}
	return abi{}, errUnknownABI
}
