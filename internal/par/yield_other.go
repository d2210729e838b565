//go:build !linux

package par

import "time"

// osYield lets the operating system run another thread.
func osYield() { time.Sleep(time.Microsecond) }
