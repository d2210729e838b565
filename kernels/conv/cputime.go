package conv

import (
	"time"

	"github.com/duel-ssl/duel/internal/proctime"
)

// cpuSeconds returns the CPU time (user + system, all threads) the process
// has used, or the wall clock where the platform cannot tell.
func cpuSeconds() float64 {
	if d, ok := proctime.CPU(); ok {
		return d.Seconds()
	}
	return float64(time.Now().UnixNano()) * 1e-9
}
