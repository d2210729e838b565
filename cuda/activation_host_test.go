package cuda

import (
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/kernels/vecmath"
)

// activationHostKernels are activation.cu's kernels on a cudatest.Host
// (kernels/vecmath's loops, whose bit operations the kernels transcribe),
// with the launch parameters of kernels/cuda's generated launchers.
var activationHostKernels = map[string]cudatest.Kernel{
	"relu_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		n := int(a.Int64(2))
		vecmath.AffineReLU(h.F32(a.Ptr(0))[:n], h.F32(a.Ptr(1))[:n], 0, 1, 0)
		return nil
	},
	"add_relu_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		n := int(a.Int64(3))
		vecmath.AffineAddReLU(h.F32(a.Ptr(0))[:n], h.F32(a.Ptr(1))[:n], h.F32(a.Ptr(2))[:n], 0, 1, 0)
		return nil
	},
	"relu_back_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		n := int(a.Int64(3))
		vecmath.ReLUGrad(h.F32(a.Ptr(0))[:n], h.F32(a.Ptr(1))[:n], h.F32(a.Ptr(2))[:n], a.Int32(4) != 0)
		return nil
	},
}

// TestActivationOnHost runs the activation tests on the backend's Go code
// with the kernels replaced by Go versions (cudatest.Host): the operands,
// offsets and launch parameters, on every go test.
func TestActivationOnHost(t *testing.T) {
	h := cudatest.NewHost()
	for name, k := range activationHostKernels {
		h.Register(name, k)
	}
	b, err := newBackend(h, 64)
	if err != nil {
		t.Fatal(err)
	}
	testActivations(t, b)
}
