//go:build unix

package proctime

import (
	"syscall"
	"time"
)

// cpu is CPU on Unix: getrusage(RUSAGE_SELF).
func cpu() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
