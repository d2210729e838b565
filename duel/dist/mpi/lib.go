package mpi

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// EnvLibrary is the environment variable that names the MPI library to
// open instead of the DefaultLibraries: a path such as
// /usr/lib/x86_64-linux-gnu/libmpich.so.12 (Debian's MPICH), or a file
// name for the dynamic loader's search.
const EnvLibrary = "DUEL_MPI_LIBRARY"

// DefaultLibraries are the file names tried in order when EnvLibrary is
// not set: Open MPI's (libmpi.so.40, Open MPI 3.0 to 5.x), MPICH's and its
// ABI-compatible derivatives' (libmpi.so.12: MPICH 3.1 and later, Intel MPI,
// MVAPICH2; libmpich.so.12: the same library under the name Debian's and
// Ubuntu's libmpich12 package installs, without libmpi.so.12) and the
// development link libmpi.so. Where Open MPI and MPICH are both installed,
// Open MPI's comes first.
var DefaultLibraries = []string{"libmpi.so.40", "libmpi.so.12", "libmpich.so.12", "libmpi.so"}

// Library returns the files Init tries to open, in order, and whether they
// come from DUEL_MPI_LIBRARY: that variable's value alone when it is set
// and not empty, else DefaultLibraries. It is the one place that reads the
// variable.
func Library() (paths []string, fromEnv bool) {
	if p := os.Getenv(EnvLibrary); p != "" {
		return []string{p}, true
	}
	return append([]string(nil), DefaultLibraries...), false
}

// lib holds the opened library: the addresses of the bound functions and
// the implementation's handles. It is filled by loadLib under loadMu and
// read-only once ok is set.
var lib struct {
	ok   bool
	path string // the file that was opened
	abi  abi

	MPI_Initialized         uintptr
	MPI_Init_thread         uintptr
	MPI_Query_thread        uintptr
	MPI_Finalize            uintptr
	MPI_Finalized           uintptr
	MPI_Comm_rank           uintptr
	MPI_Comm_size           uintptr
	MPI_Comm_set_errhandler uintptr
	MPI_Error_string        uintptr
	MPI_Get_library_version uintptr
	MPI_Barrier             uintptr
	MPI_Bcast               uintptr
	MPI_Allreduce           uintptr
	MPI_Allgather           uintptr
	MPI_Allgatherv          uintptr
	MPI_Iallreduce          uintptr
	MPI_Iallgather          uintptr
	MPI_Wait                uintptr
	MPI_Test                uintptr
	MPI_Abort               uintptr
}

// symbols lists each bound function with its exported name (all MPI-3; the
// non-blocking collectives need Open MPI 1.7 / MPICH 3.0 or later).
var symbols = []struct {
	dst  *uintptr
	name string
}{
	{&lib.MPI_Initialized, "MPI_Initialized"},
	{&lib.MPI_Init_thread, "MPI_Init_thread"},
	{&lib.MPI_Query_thread, "MPI_Query_thread"},
	{&lib.MPI_Finalize, "MPI_Finalize"},
	{&lib.MPI_Finalized, "MPI_Finalized"},
	{&lib.MPI_Comm_rank, "MPI_Comm_rank"},
	{&lib.MPI_Comm_size, "MPI_Comm_size"},
	{&lib.MPI_Comm_set_errhandler, "MPI_Comm_set_errhandler"},
	{&lib.MPI_Error_string, "MPI_Error_string"},
	{&lib.MPI_Get_library_version, "MPI_Get_library_version"},
	{&lib.MPI_Barrier, "MPI_Barrier"},
	{&lib.MPI_Bcast, "MPI_Bcast"},
	{&lib.MPI_Allreduce, "MPI_Allreduce"},
	{&lib.MPI_Allgather, "MPI_Allgather"},
	{&lib.MPI_Allgatherv, "MPI_Allgatherv"},
	{&lib.MPI_Iallreduce, "MPI_Iallreduce"},
	{&lib.MPI_Iallgather, "MPI_Iallgather"},
	{&lib.MPI_Wait, "MPI_Wait"},
	{&lib.MPI_Test, "MPI_Test"},
	{&lib.MPI_Abort, "MPI_Abort"},
}

// loadMu guards lib while it is being filled. A failed load is not
// remembered: the next call tries again (DUEL_MPI_LIBRARY may have
// changed, as it does between tests).
var loadMu sync.Mutex

// loadLib opens the MPI library (openLibrary) and binds the functions and
// handles, once per process on success. The caller must not hold callMu.
func loadLib() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if lib.ok {
		return nil
	}
	h, path, err := openLibrary()
	if err != nil {
		return err
	}
	if err := bind(h, path); err != nil {
		return err
	}
	lib.path = path
	lib.ok = true
	return nil
}

// openLibrary opens the first of Library's files that the dynamic loader
// can open (RTLD_GLOBAL: Open MPI's plugins resolve symbols of libmpi) and
// returns its handle and name. Without one the error wraps ErrNoMPI and
// names every file tried. It sets the signal variables first and puts
// Go's signal handlers back afterwards (quietMPISignals, restoreSignals).
func openLibrary() (h uintptr, path string, err error) {
	if err := platformError(); err != nil {
		return 0, "", err
	}
	paths, fromEnv := Library()
	// Loading the library runs its dependencies' constructors, and UCX's
	// (libucs, under MPICH's ch4:ucx) reads UCX_ERROR_SIGNALS and installs
	// handlers for Go's signals there, before MPI_Init.
	if err := quietMPISignals(); err != nil {
		return 0, "", err
	}
	saved, err := saveSignals()
	if err != nil {
		return 0, "", err
	}
	var fails []string
	for _, p := range paths {
		h, err := dlopen(p)
		if err == nil {
			if err := restoreSignals(saved, "dlopen "+p); err != nil {
				return 0, "", err
			}
			return h, p, nil
		}
		fails = append(fails, err.Error()) // dlerror names the file
	}
	if err := restoreSignals(saved, "dlopen"); err != nil {
		return 0, "", err
	}
	if fromEnv {
		return 0, "", fmt.Errorf("mpi: %s=%s cannot be opened (%w) [dlopen: %s]: point %s at libmpi.so.40 (Open MPI) or libmpi.so.12 / libmpich.so.12 (MPICH), or unset it",
			EnvLibrary, paths[0], ErrNoMPI, strings.Join(fails, "; "), EnvLibrary)
	}
	return 0, "", fmt.Errorf("mpi: none of %s can be opened (%w) [dlopen: %s]: install Open MPI (apt-get install openmpi-bin) or set %s to the MPI library",
		strings.Join(paths, ", "), ErrNoMPI, strings.Join(fails, "; "), EnvLibrary)
}

// bind looks up every function of symbols and the implementation's handles
// in the library h opened from path.
func bind(h uintptr, path string) error {
	a, err := detectABI(h)
	if err != nil {
		return fmt.Errorf("mpi: %s: %w", path, err)
	}
	for _, s := range symbols {
		p, err := dlsym(h, s.name)
		if err != nil {
			for _, t := range symbols {
				*t.dst = 0
			}
			return fmt.Errorf("mpi: %s has no %s (not an MPI-3 library?): %w", path, s.name, err)
		}
		*s.dst = p
	}
	lib.abi = a
	return nil
}

// errUnknownABI is returned by detectABI for a library that is neither Open
// MPI nor of MPICH's family.
var errUnknownABI = errors.New("neither Open MPI (no ompi_mpi_comm_world) nor MPICH (no MPIR_Dup_fn or MPIR_Err_create_code): unsupported MPI implementation")

// callRaw calls the C function at fn with integer or pointer arguments and
// returns its first result register (the MPI error code, a C int). Pointer
// arguments converted to uintptr in the call expression are moved to the
// heap and kept alive for the call (go:uintptrescapes), so the C side may
// write through them; a pointer the C side keeps after the call returns
// (the buffers of a non-blocking collective) must be pinned by the caller.
//
//go:uintptrescapes
func callRaw(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// goString copies the C string in b up to its first NUL, or all of b.
func goString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
