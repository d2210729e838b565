package cuda

import (
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor/backendtest"
)

// The test GPUs implement GPU (and the backend's AXPY opcode is the one
// their Go binary_f32 knows).
var (
	_ GPU = (*cudatest.Host)(nil)
	_ GPU = (*cudatest.Emulator)(nil)
	_ GPU = (*Device)(nil)

	_ SharedMemoryOptIn = (*Device)(nil)
)

func TestAXPYOpcode(t *testing.T) {
	if opAXPY != cudatest.OpAXPY {
		t.Fatalf("opAXPY = %d, cudatest.OpAXPY = %d", opAXPY, cudatest.OpAXPY)
	}
}

// TestBackendOnHost runs the conformance suite on the CUDA backend's Go
// code with the kernels replaced by Go versions (cudatest.Host): this
// checks the layouts, axis permutations, offsets and launch parameters
// without a GPU.
func TestBackendOnHost(t *testing.T) {
	b, err := newBackend(cudatest.NewHost(), 64)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, b)
}
