package proctime

import (
	"runtime"
	"testing"
	"time"
)

// TestCPUAdvances checks that CPU time grows while the process computes
// and is never ahead of what its threads could have used.
func TestCPUAdvances(t *testing.T) {
	t0, ok := CPU()
	if !ok {
		t.Skipf("no process CPU time on %s", runtime.GOOS)
	}
	start := time.Now()
	x := 0.0
	for time.Since(start) < 50*time.Millisecond {
		for i := range 100000 {
			x += float64(i)
		}
	}
	t1, _ := CPU()
	wall := time.Since(start)
	if t1 <= t0 {
		t.Fatalf("CPU time went from %v to %v over %v of computing (%g)", t0, t1, wall, x)
	}
	if limit := wall*time.Duration(runtime.NumCPU()) + 20*time.Millisecond; t1-t0 > limit {
		t.Fatalf("CPU time grew %v in %v of wall time on %d CPUs", t1-t0, wall, runtime.NumCPU())
	}
	if got := CPUOrZero(); got < t1 {
		t.Fatalf("CPUOrZero %v went back from %v", got, t1)
	}
}
