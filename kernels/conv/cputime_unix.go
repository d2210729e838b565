//go:build unix

package conv

import (
	"syscall"
	"time"
)

// cpuSeconds returns the CPU time (user + system, all threads) the process
// has used, or the wall clock where getrusage fails.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return float64(time.Now().UnixNano()) * 1e-9
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) * 1e-9
}
