package cuda

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// envJITWarm names the module (its .cu source) TestJITWarm loads, or
// "list" for the names of all of them.
const envJITWarm = "DUEL_JIT_WARM"

// TestJITWarm loads one module on device 0 and prints how long it took
// ("jit SOURCE SECONDS s on DEVICE"): on a machine whose driver has not
// compiled the module yet, the driver's JIT of its PTX. bench/gpu_check.sh
// runs one process per module at once (DUEL_JIT_WARM=list prints them,
// "module SOURCE" a line), so that every module's JIT runs on the host's
// cores side by side and lands in the driver's cache before the tests,
// which would otherwise wait for them one after the other (ptxas's time
// for each: bench/RESULTS.md, "The driver's JIT of every module").
// Skipped unless DUEL_JIT_WARM is set.
func TestJITWarm(t *testing.T) {
	src := os.Getenv(envJITWarm)
	switch src {
	case "":
		t.Skip(envJITWarm + " not set: bench/gpu_check.sh's warm_jit sets it")
	case "list":
		for _, m := range kc.Modules() {
			fmt.Println("module", m.Source)
		}
		return
	}
	mods := kc.Modules()
	i := slices.IndexFunc(mods, func(m *kc.Module) bool { return m.Source == src })
	if i < 0 {
		t.Fatalf("%s=%q: no module of that source (%s=list names them)", envJITWarm, src, envJITWarm)
	}
	m := mods[i]
	d := needGPU(t)
	if len(m.Targets(d.cc)) == 0 || len(m.Kernels) == 0 {
		fmt.Printf("jit %s not loaded on %v (min-arch %d)\n", src, d, m.MinArch)
		return
	}
	t0 := time.Now()
	if _, err := d.function(m, m.Kernels[0]); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("jit %s %.2f s on %v\n", src, time.Since(t0).Seconds(), d)
}
