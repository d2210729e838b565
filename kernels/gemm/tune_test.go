package gemm

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTune is the blocking-parameter harness behind the package's choices,
// off unless DUEL_TUNE is set. It times single sgemm calls of the best
// kernel (NN, alpha 1, beta 0) for each blocking "mc,kc,nc,ns" of DUEL_TUNE on
// each shape "m,n,k" of DUEL_TUNE_SHAPES (entries separated by ';'), on
// DUEL_TUNE_THREADS threads (default 1), interleaving the blockings, and
// prints the fastest of DUEL_TUNE_REPS calls (default 10): the call least
// disturbed by other processes. Example:
//
//	DUEL_TUNE='140,432,4032,288;336,384,4096,4096' DUEL_TUNE_SHAPES='1024,1024,1024' \
//	DUEL_TUNE_THREADS=2 DUEL_TUNE_REPS=20 go test -run TestTune -v ./kernels/gemm
func TestTune(t *testing.T) {
	if os.Getenv("DUEL_TUNE") == "" {
		t.Skip("set DUEL_TUNE to run the tuning harness")
	}
	parse := func(name string, want int) [][]int {
		var r [][]int
		for _, part := range strings.Split(os.Getenv(name), ";") {
			var v []int
			for _, f := range strings.Split(part, ",") {
				x, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || x <= 0 {
					t.Fatalf("%s: %q: expected %d positive integers separated by ',' per entry", name, part, want)
				}
				v = append(v, x)
			}
			if len(v) != want {
				t.Fatalf("%s: %q: expected %d positive integers", name, part, want)
			}
			r = append(r, v)
		}
		return r
	}
	cfgs, shapes := parse("DUEL_TUNE", 4), parse("DUEL_TUNE_SHAPES", 3)
	threads, reps := 1, 10
	if v := os.Getenv("DUEL_TUNE_THREADS"); v != "" {
		threads, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("DUEL_TUNE_REPS"); v != "" {
		reps, _ = strconv.Atoi(v)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(1, threads)))
	// mc and ns are rounded up to multiples of the register tile, nc to a
	// multiple of ns.
	kns := make([]kernel, len(cfgs))
	for i, cf := range cfgs {
		kns[i] = *available[0]
		kn := &kns[i]
		ns := ceilDiv(cf[3], kn.nr) * kn.nr
		*kn = *kn.withBlocking(blocking{mc: ceilDiv(cf[0], kn.mr) * kn.mr, kc: cf[1], nc: ceilDiv(cf[2], ns) * ns, ns: ns})
	}
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		a, b, c := benchOperands(m, n, k)
		best := make([]time.Duration, len(cfgs))
		for i := range best {
			best[i] = time.Duration(1<<63 - 1)
		}
		for r := 0; r < max(1, reps); r++ {
			for i := range kns {
				t0 := time.Now()
				sgemm(&kns[i], problem{false, false, m, n, k, 1, a, k, b, n, 0, c, n, nil}, runtime.GOMAXPROCS(0))
				best[i] = min(best[i], time.Since(t0))
			}
		}
		for i, kn := range kns {
			fmt.Printf("%s %dx%dx%d mc=%d kc=%d nc=%d ns=%d threads=%d: %.1f GFLOP/s (fastest of %d calls)\n",
				kn.name, m, n, k, kn.mc, kn.kc, kn.nc, kn.ns, threads, 2*float64(m)*float64(n)*float64(k)/best[i].Seconds()/1e9, reps)
		}
	}
}
