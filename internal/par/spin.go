package par

import (
	"runtime"
	"sync/atomic"
)

// SpinWait waits until v reaches want: for shares of one RunShares call
// that wait for each other (they all run at once, so spinning is safe).
// After a short spin it yields the processor to the operating system
// (osYield): when the machine is oversubscribed, the thread being waited
// for may be the one that runs.
func SpinWait(v *atomic.Int32, want int32) {
	for i := 0; v.Load() < want; i++ {
		switch {
		case i < 64:
		case i < 128:
			runtime.Gosched()
		default:
			osYield()
		}
	}
}
