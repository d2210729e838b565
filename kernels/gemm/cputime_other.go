//go:build !unix

package gemm

import "time"

// processCPU reports that the CPU time is not available here: Tune then
// ranks candidates by wall time.
func processCPU() (time.Duration, bool) { return 0, false }
