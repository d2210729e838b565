//go:build linux && amd64 && !noasm

package gemm

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// Linux's arch_prctl codes for the dynamically enabled AMX tile data state
// (arch/x86/include/uapi/asm/prctl.h, Linux 5.16 and later).
const (
	archGetXCompPerm = 0x1022
	archReqXCompPerm = 0x1023
	xfeatureTileData = 18
)

// requestAMX asks Linux, once per process, for permission to use the AMX
// tile data state (which every thread of the process then has), and
// checks that it was granted: a tile instruction without it is killed
// with SIGILL.
var requestAMX = sync.OnceValue(func() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatureTileData, 0); e != 0 {
		return fmt.Errorf("the kernel refused the AMX tile state (Linux arch_prctl ARCH_REQ_XCOMP_PERM: %w)", e)
	}
	var mask uint64
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archGetXCompPerm, uintptr(unsafe.Pointer(&mask)), 0); e != 0 {
		return fmt.Errorf("cannot read the permitted state (arch_prctl ARCH_GET_XCOMP_PERM: %w)", e)
	}
	if mask&(1<<xfeatureTileData) == 0 {
		return fmt.Errorf("the kernel did not grant the AMX tile state (Linux arch_prctl: permitted features %#x)", mask)
	}
	return nil
})
