//go:build !windows

package mpi

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"
)

// signalEnvs are the parameters (environment variables) that list the
// signals whose handlers the MPI libraries install: Open MPI's opal_signal
// ("6,7,8,11" by default, installed by MPI_Init) and UCX's error signals
// ("ILL,SEGV,BUS,FPE" by default, installed when libucs is loaded: UCX is
// the transport of Debian's MPICH, built with ch4:ucx, and of Open MPI's
// pml ucx). quietMPISignals sets each to "" unless it is set.
var signalEnvs = []string{"OMPI_MCA_opal_signal", "UCX_ERROR_SIGNALS"}

// goSignals are the signals whose handlers, the Go runtime's,
// restoreSignals puts back: those that turn faults into panics.
var goSignals = []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL}

// libc holds libc's setenv and sigaction, found among the symbols already
// loaded (RTLD_DEFAULT: the Go runtime links libc, through cgo or purego's
// fakecgo), so that they can be called before the MPI library is opened.
var libc struct {
	once              sync.Once
	setenv, sigaction uintptr
	err               error
}

// libcFuncs binds libc's functions, once.
func libcFuncs() error {
	libc.once.Do(func() {
		for _, s := range []struct {
			dst  *uintptr
			name string
		}{{&libc.setenv, "setenv"}, {&libc.sigaction, "sigaction"}} {
			p, err := purego.Dlsym(purego.RTLD_DEFAULT, s.name)
			if err != nil {
				libc.err = fmt.Errorf("mpi: libc's %s not found: %w", s.name, err)
				return
			}
			*s.dst = p
		}
	})
	return libc.err
}

// sigMu guards replacedSignals and makes a save/restore pair of one
// goroutine not interleave with another's.
var sigMu sync.Mutex

// replacedSignals lists the signal handlers that loading the library or
// MPI_Init replaced and restoreSignals put back, as "SIGSEGV (dlopen
// libmpich.so.12)" (for tests and diagnosis). Guarded by sigMu.
var replacedSignals []string

// quietMPISignals sets each of signalEnvs to "" unless it is set: with
// os.Setenv, which reaches C's environment in a binary with cgo or
// purego's fakecgo (the only ones purego runs in), and with libc's setenv
// (overwrite 0, a no-op then) as a safeguard. Implementations without them
// ignore the variables; the launcher's ranks inherit them.
func quietMPISignals() error {
	if err := libcFuncs(); err != nil {
		return err
	}
	for _, v := range signalEnvs {
		if _, set := os.LookupEnv(v); set {
			continue
		}
		if err := os.Setenv(v, ""); err != nil {
			return fmt.Errorf("mpi: setting %s: %w", v, err)
		}
		name, val := cString(v), cString("")
		// overwrite 0: a value already in C's environment is the user's.
		if callRaw(libc.setenv, uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(&val[0])), 0) != 0 {
			return fmt.Errorf("mpi: setenv(%s) failed", v)
		}
	}
	return nil
}

// savedSignal is a signal's disposition as libc's sigaction reads it: a
// struct sigaction, whose first word is the handler on every Linux, macOS
// and FreeBSD target of purego, in a buffer larger than any of them (152
// bytes on linux/amd64).
type savedSignal struct {
	sig syscall.Signal
	act [32]uint64
}

// saveSignals reads the handlers of goSignals (libc's sigaction) and takes
// sigMu, which restoreSignals releases.
func saveSignals() ([]savedSignal, error) {
	if err := libcFuncs(); err != nil {
		return nil, err
	}
	sigMu.Lock()
	saved := make([]savedSignal, len(goSignals))
	for i, sig := range goSignals {
		saved[i].sig = sig
		if int32(callRaw(libc.sigaction, uintptr(sig), 0, uintptr(unsafe.Pointer(&saved[i].act)))) != 0 {
			sigMu.Unlock()
			return nil, fmt.Errorf("mpi: sigaction(%s) failed", signalName(sig))
		}
	}
	return saved, nil
}

// restoreSignals puts back each handler of saved that is no longer
// installed after what (the call made since saveSignals), records it in
// replacedSignals and releases sigMu.
func restoreSignals(saved []savedSignal, what string) error {
	defer sigMu.Unlock()
	for i := range saved {
		s := &saved[i]
		var cur [32]uint64
		if int32(callRaw(libc.sigaction, uintptr(s.sig), 0, uintptr(unsafe.Pointer(&cur)))) != 0 {
			return fmt.Errorf("mpi: sigaction(%s) failed", signalName(s.sig))
		}
		if cur[0] == s.act[0] {
			continue
		}
		if int32(callRaw(libc.sigaction, uintptr(s.sig), uintptr(unsafe.Pointer(&s.act)), 0)) != 0 {
			return fmt.Errorf("mpi: %s replaced the handler of %s and putting Go's back failed", what, signalName(s.sig))
		}
		replacedSignals = append(replacedSignals, fmt.Sprintf("%s (%s)", signalName(s.sig), what))
	}
	return nil
}

// cString returns s as a NUL-terminated byte slice for C.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// signalName returns the C name of a signal of goSignals.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGFPE:
		return "SIGFPE"
	case syscall.SIGILL:
		return "SIGILL"
	}
	return fmt.Sprintf("signal %d", int(sig))
}
