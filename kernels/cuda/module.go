package cuda

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/cuda/driver"
)

// Module is one .cu source compiled to PTX for several compute
// capabilities.
type Module struct {
	Source  string         // file name of the .cu source in this directory
	SHA256  string         // hex SHA-256 of the source the PTX came from and the headers it includes (SourceSHA256)
	Toolkit string         // the nvcc that compiled it (nvcc --version)
	PTX     map[int]string // PTX text by compute capability (60 = sm_60)
	// MinArch is the lowest compute capability the module is compiled
	// for when its source asks for one ("// gen: min-arch 80":
	// gemm_tc.cu's tensor-core instructions); 0 means every target. A
	// device below it loads none of the module's PTX.
	MinArch int
	// ArchSpecific marks PTX compiled for an architecture-specific target
	// ("// gen: arch 90a": sm_90a, gemm_wg.cu's wgmma), which loads on
	// compute capability MinArch only, not on later ones.
	ArchSpecific bool
	Kernels      []string // the extern "C" kernels it defines
	// Params holds, per kernel, the Go types its launcher passes, in
	// order; a test checks them against the PTX's .param sizes.
	Params map[string][]string
}

// Targets returns the compute capabilities of m's PTX that a device of
// capability cc can load, highest first (PTX for a lower capability is
// JIT-compiled for the device; a higher one is rejected). An ArchSpecific
// module's PTX serves its MinArch only.
func (m *Module) Targets(cc int) []int {
	if m.ArchSpecific && cc != m.MinArch {
		return nil
	}
	var t []int
	for c := range m.PTX {
		if c <= cc {
			t = append(t, c)
		}
	}
	slices.Sort(t)
	slices.Reverse(t)
	return t
}

// Modules returns the generated modules, sorted by source name.
func Modules() []*Module {
	m := slices.Clone(modules)
	slices.SortFunc(m, func(a, b *Module) int {
		switch {
		case a.Source < b.Source:
			return -1
		case a.Source > b.Source:
			return 1
		}
		return 0
	})
	return m
}

// modules lists the generated modules; each zz_generated file adds its own
// in an init function. It is written only during package initialisation.
var modules []*Module

// Config is a launch configuration: Grid x Block threads and Shared bytes
// of dynamic shared memory.
type Config struct {
	Grid, Block driver.Dim3
	Shared      int
}

// Launcher runs kernel of module m with cfg and the kernel's parameters in
// order (see driver.Function.Launch for the accepted types).
type Launcher interface {
	Launch(m *Module, kernel string, cfg Config, args ...any) error
}

// check verifies cfg for kernel before a launch: positive sizes, at most
// maxThreads threads per block (the kernel's __launch_bounds__, or 1024)
// and, when warps is set, a block made of whole warps.
func (cfg Config) check(kernel string, maxThreads int, warps bool) error {
	g, b := cfg.Grid, cfg.Block
	if g.X <= 0 || g.Y <= 0 || g.Z <= 0 || g.Y > 65535 || g.Z > 65535 || g.X > 1<<31-1 {
		return fmt.Errorf("kernel %s: bad grid %v, expected X in 1..2^31-1, Y and Z in 1..65535", kernel, g)
	}
	if b.X <= 0 || b.Y <= 0 || b.Z <= 0 || b.X*b.Y*b.Z > maxThreads {
		return fmt.Errorf("kernel %s: bad block %v, expected 1..%d threads", kernel, b, maxThreads)
	}
	if warps && (b.Y != 1 || b.Z != 1 || b.X%32 != 0) {
		return fmt.Errorf("kernel %s: block %v, expected a one-dimensional block of whole warps (a multiple of 32)", kernel, b)
	}
	if cfg.Shared < 0 {
		return fmt.Errorf("kernel %s: %d bytes of shared memory, expected >= 0", kernel, cfg.Shared)
	}
	return nil
}

// checkPtr reports a nil device pointer passed as parameter name.
func checkPtr(kernel, name string, p driver.DevicePtr) error {
	if p == 0 {
		return fmt.Errorf("kernel %s: parameter %s is a nil device pointer", kernel, name)
	}
	return nil
}
