// Package proctime reads the CPU time the process has used, all threads
// together: on Unix from getrusage(RUSAGE_SELF), on Windows from
// GetProcessTimes. Unlike the wall clock it hardly depends on what else
// runs on the machine, which makes it the steadier figure for ranking
// candidates (conv and gemm tuning) and reporting per-step cost on a
// shared host.
package proctime

import "time"

// CPU returns the user plus system CPU time of the process and true, or 0
// and false where the platform cannot tell.
func CPU() (time.Duration, bool) { return cpu() }

// CPUOrZero returns CPU's time, 0 where it is unavailable.
func CPUOrZero() time.Duration {
	d, _ := CPU()
	return d
}
