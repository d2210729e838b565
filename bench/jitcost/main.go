// Command jitcost estimates, without a GPU, what a device's first use of
// duel's kernels costs: the driver compiles each module's embedded PTX
// for the device when the module is first loaded (cuModuleLoadData), as
// ptxas does. It runs the given ptxas on the PTX that cuda.Device would
// load on a device of the given compute capability (kernels/cuda's
// Module.Targets), module by module, and prints the CPU time of each and
// the total, largest first.
//
//	go run ./bench/jitcost -ptxas /path/to/ptxas [-cc 90]
//
// The driver caches what it compiles (~/.nv/ComputeCache), so the cost
// is paid once per machine and module version. ptxas' version should
// match the GPU driver's CUDA version for a close estimate; any ptxas
// that knows the architecture gives the module's relative cost.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// cost is one module's compilation.
type cost struct {
	source   string
	target   int // the PTX's compute capability
	ptxBytes int
	cpu      time.Duration // ptxas' user and system time
	note     string
}

func main() {
	ptxas := flag.String("ptxas", "ptxas", "the ptxas to run (CUDA 12 or later for sm_90)")
	cc := flag.Int("cc", 90, "the device's compute capability (90: H100, H200)")
	flag.Parse()
	if err := run(*ptxas, *cc); err != nil {
		fmt.Fprintln(os.Stderr, "jitcost:", err)
		os.Exit(1)
	}
}

func run(ptxas string, cc int) error {
	if cc < 50 || cc > 200 {
		return fmt.Errorf("-cc %d: expected a compute capability such as 80 or 90", cc)
	}
	tmp, err := os.MkdirTemp("", "jitcost")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var costs []cost
	var total time.Duration
	for _, m := range kc.Modules() {
		t := m.Targets(cc)
		if len(t) == 0 {
			costs = append(costs, cost{source: m.Source, note: fmt.Sprintf("not loaded at %d (min-arch %d)", cc, m.MinArch)})
			continue
		}
		arch := fmt.Sprintf("sm_%d", cc)
		if m.ArchSpecific {
			arch += "a"
		}
		ptx := filepath.Join(tmp, m.Source+".ptx")
		if err := os.WriteFile(ptx, []byte(m.PTX[t[0]]), 0o644); err != nil {
			return err
		}
		cmd := exec.Command(ptxas, "-arch="+arch, ptx, "-o", filepath.Join(tmp, m.Source+".cubin"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %s -arch=%s on its sm_%d PTX: %w\n%s", m.Source, ptxas, arch, t[0], err, out)
		}
		c := cost{source: m.Source, target: t[0], ptxBytes: len(m.PTX[t[0]]), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
		total += c.cpu
		costs = append(costs, c)
	}
	slices.SortStableFunc(costs, func(a, b cost) int { return cmp.Compare(b.cpu, a.cpu) })
	fmt.Printf("ptxas %s for sm_%d, module by module (the driver's JIT on a device's first use)\n", ptxas, cc)
	fmt.Printf("%-22s %6s %10s %9s\n", "module", "PTX", "PTX bytes", "CPU s")
	for _, c := range costs {
		if c.note != "" {
			fmt.Printf("%-22s %s\n", c.source, c.note)
			continue
		}
		fmt.Printf("%-22s sm_%-3d %10d %9.2f\n", c.source, c.target, c.ptxBytes, c.cpu.Seconds())
	}
	fmt.Printf("%-22s %6s %10s %9.2f\n", "total", "", "", total.Seconds())
	return nil
}
