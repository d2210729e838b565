// Package mpi is dist.Comm over MPI, bound at run time without cgo: the MPI
// library is opened with purego (Dlopen/Dlsym) when Init is called, so
// building duel needs nothing from MPI, and a process without MPI (or
// started without a launcher, see Launched) runs unchanged; a missing
// library is an error wrapping ErrNoMPI, never a crash.
//
// # What is bound
//
// MPI_Initialized, MPI_Init_thread, MPI_Query_thread, MPI_Finalized,
// MPI_Finalize, MPI_Comm_rank, MPI_Comm_size, MPI_Comm_set_errhandler,
// MPI_Error_string, MPI_Get_library_version, MPI_Barrier, MPI_Bcast,
// MPI_Allreduce (in place, MPI_SUM of MPI_FLOAT or MPI_DOUBLE),
// MPI_Allgather and MPI_Allgatherv (MPI_BYTE), MPI_Iallreduce,
// MPI_Iallgather, MPI_Wait, MPI_Test and MPI_Abort, on MPI_COMM_WORLD:
// Init returns it as a *Comm, which implements dist.Comm and adds
// AllGatherV and IAllGather.
//
// # Implementations
//
// The library is DUEL_MPI_LIBRARY's file when that variable is set, else
// the first of libmpi.so.40, libmpi.so.12, libmpich.so.12 and libmpi.so
// that the dynamic loader finds (Library): where both are installed, Open
// MPI's comes first. Functions are the MPI standard's; what differs is the
// binary form of mpi.h's handles (abi.go), told apart by the symbols the
// library exports:
//
//   - Open MPI (libmpi.so.40; exports ompi_mpi_comm_world): handles are the
//     addresses of exported globals (ompi_mpi_comm_world, ompi_mpi_float,
//     ompi_mpi_double, ompi_mpi_byte, ompi_mpi_op_sum,
//     ompi_mpi_errors_return), MPI_IN_PLACE is (void *)1,
//     MPI_STATUS_IGNORE is NULL, MPI_Request a pointer. Tested: Open MPI
//     4.1.4 (Debian 12's openmpi-bin), 2 ranks on one machine.
//   - MPICH and its ABI (libmpi.so.12: MPICH 3.1+, Intel MPI, MVAPICH2;
//     Debian's and Ubuntu's libmpich12 installs it as libmpich.so.12 only;
//     exports MPIR_Dup_fn): handles are int constants (MPI_COMM_WORLD
//     0x44000000, MPI_FLOAT 0x4c00040a, MPI_DOUBLE 0x4c00080b, MPI_BYTE
//     0x4c00010d, MPI_SUM 0x58000003, MPI_ERRORS_RETURN 0x54000001),
//     MPI_IN_PLACE is (void *)-1, MPI_STATUS_IGNORE is (MPI_Status *)1 (not
//     NULL), MPI_Request an int. The values are checked against MPICH
//     4.0.2's mpi.h (Debian 12's libmpich-dev). Tested: MPICH 4.0.2 (Debian
//     12's mpich and libmpich12, device ch4:ucx), 2 ranks on one machine
//     under its Hydra mpiexec.mpich: every collective, the errors, Abort,
//     and duelctl's TestTrainMPIRun (2-rank training equal to one process).
//
// The MPI_THREAD_* levels are 0 to 3 in both.
//
// # Threading
//
// Init asks for MPI_THREAD_SERIALIZED and fails when the library provides
// less. A goroutine moves between OS threads, so even one goroutine's
// calls reach MPI from several threads (MPI_THREAD_FUNNELED would forbid
// that), and every MPI call of the process is serialised by one mutex in
// this package: the methods of a Comm and of its Requests may be called
// from any goroutine. A blocking call (a collective, Request.Wait) holds
// the mutex while it blocks; a goroutine that must not wait for it polls
// Request.Test. Abort is the exception: it takes the mutex if it can
// within a second and calls MPI_Abort regardless, since it exists to end a
// job that may be blocked in a collective.
//
// # Errors
//
// MPI_COMM_WORLD's error handler is set to MPI_ERRORS_RETURN, so a failed
// call returns its code rather than aborting the job, and comes back as an
// *Error with the function and MPI_Error_string's text, Open MPI's
//
//	mpi: MPI_Bcast: MPI_ERR_ROOT: invalid root (error code 8)
//
// or MPICH's, an error stack over several lines with a large code:
//
//	mpi: MPI_Bcast: Invalid root, error stack:
//	internal_Bcast(107): MPI_Bcast(buffer=0x..., count=8, MPI_BYTE, -5, MPI_COMM_WORLD) failed
//	internal_Bcast(61).: Invalid root (value given was -5) (error code 941171975)
//
// Lengths MPI cannot check (an all-gather's receive buffer) are checked in
// Go first. A Comm used after Close returns errors wrapping
// dist.ErrClosed.
//
// # Signals
//
// SIGSEGV, SIGBUS, SIGFPE and SIGILL belong to the Go runtime, which turns
// a nil dereference into a panic through its SIGSEGV handler. MPI
// libraries install handlers of their own that print a stack trace and
// abort: Open MPI in MPI_Init (its MCA parameter opal_signal, "6,7,8,11";
// it documents that it keeps handlers already installed, which Go's are),
// and UCX, the transport of Debian's MPICH (ch4:ucx) and of Open MPI's pml
// ucx, as soon as its libucs is loaded (UCX_ERROR_SIGNALS,
// "ILL,SEGV,BUS,FPE"), replacing Go's: under MPICH 4.0.2 a nil
// dereference after Init is then UCX's "Caught signal 11" and a crash. So
// before opening the library and before MPI_Init, the package sets
// OMPI_MCA_opal_signal and UCX_ERROR_SIGNALS to "" (in Go's environment,
// which reaches C's, and with libc's setenv) unless they are already set,
// and after each it puts back, with libc's sigaction, any handler of those
// four signals that was replaced, whatever replaced it (TestMPISignals
// sets both variables to their defaults to check that). The launcher's
// ranks inherit the variables.
//
// # Buffers
//
// The Go memory of a blocking call is only used during the call. A
// non-blocking collective's buffers are used after the call returns: its
// Request pins them with a runtime.Pinner and the Comm keeps the Request
// reachable until Wait, Test or Close completes it; the caller must not
// touch them until then.
//
// # Running
//
// Start the ranks with the MPI launcher of the library's implementation;
// Launched tells a process that it was started by one, LauncherRank its
// rank before Init:
//
//	mpirun -np 2 duelctl train ...
//	DUEL_MPI_LIBRARY=/usr/lib/x86_64-linux-gnu/libmpich.so.12 mpiexec.mpich -n 2 duelctl train ...
//
// As root (containers), Open MPI's mpirun needs --allow-run-as-root (or
// OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1); with more
// ranks than cores, --oversubscribe; on one machine in a container,
// --mca btl self,vader --mca btl_vader_single_copy_mechanism none (shared
// memory without CMA/KNEM). MPICH's Hydra needs no flag for that.
//
// LocalCommand builds such a line for np ranks on this machine: the
// launcher is DUEL_MPIRUN (a path or a name on PATH), else mpirun from
// PATH, and its flags are chosen by the launcher's implementation, read
// from its --version (LauncherKind: Open MPI's flags above for Open MPI's
// mpirun, none for Hydra). A launcher of another implementation than the
// library Library loads (Open MPI's mpirun with DUEL_MPI_LIBRARY at
// MPICH's library, or the reverse) is refused with an error naming both
// variables: its ranks would each be a job of one.
//
// # Tests
//
// The tests of this package (TestMPIRun, TestMPIAbort, TestMPISignals) and
// duelctl's run themselves in 2 ranks through LocalCommand, and skip where
// the launcher is not found or the library does not load. With Open MPI
// as the default (Debian's openmpi-bin):
//
//	go test ./duel/dist/mpi/
//
// Against MPICH installed beside it (apt-get install --no-install-recommends
// mpich: Debian's alternatives keep mpirun and mpiexec Open MPI's, at
// priority 50 against MPICH's 40, and libmpi.so.40 still loads by default):
//
//	DUEL_MPI_LIBRARY=/usr/lib/x86_64-linux-gnu/libmpich.so.12 DUEL_MPIRUN=mpiexec.mpich go test ./duel/dist/mpi/
package mpi
