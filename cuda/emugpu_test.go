package cuda

import (
	"fmt"
	"os"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor/backendtest"
)

// TestMain removes the emulator library's directory after the tests.
func TestMain(m *testing.M) { os.Exit(cudatest.Main(m)) }

// TestConformanceEmulated runs tensor's conformance suite through the CUDA
// backend with the real kernels on the CPU emulator (cudatest.Emulator):
// the whole path of a GPU run except the driver itself.
func TestConformanceEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	for _, bs := range []int{64} { // one size: duel/memory/cudaduel's TestDUELEmulated and emu/*_emu.cpp vary it
		t.Run(fmt.Sprintf("block%d", bs), func(t *testing.T) {
			b, err := newBackend(e, bs)
			if err != nil {
				t.Fatal(err)
			}
			backendtest.Run(t, b)
		})
	}
}
