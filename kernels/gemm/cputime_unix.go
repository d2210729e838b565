//go:build unix

package gemm

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time this process has used, all threads
// together, and true; Tune ranks candidates by it (see measure).
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
