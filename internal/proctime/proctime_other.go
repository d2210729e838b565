//go:build !unix && !windows

package proctime

import "time"

// cpu is CPU where the platform has neither getrusage nor GetProcessTimes.
func cpu() (time.Duration, bool) { return 0, false }
