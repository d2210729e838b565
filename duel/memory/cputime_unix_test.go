//go:build unix

package memory

import (
	"syscall"
	"time"
)

// cpuTime returns the user + system CPU time of the process (all threads),
// 0 if it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
