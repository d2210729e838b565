package cuda

import (
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/kernels/pool"
)

// poolHostKernels are pool.cu's kernels on a cudatest.Host (kernels/pool's
// passes, which the kernels compute in the same order), with the launch
// parameters of kernels/cuda's generated launchers.
var poolHostKernels = map[string]cudatest.Kernel{
	"maxpool2d_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		g := poolHostGeom(a, 3)
		pool.MaxForward(g, int(a.Int32(8)), int(a.Int32(9)), int(a.Int32(10)),
			h.F32(a.Ptr(2))[:g.Planes*g.H*g.W], h.F32(a.Ptr(0))[:g.Planes*g.OH*g.OW], h.I32(a.Ptr(1))[:g.Planes*g.OH*g.OW])
		return nil
	},
	"maxpool2d_back_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		g := poolHostGeom(a, 3)
		pool.MaxBackward(g, h.F32(a.Ptr(0))[:g.Planes*g.H*g.W], h.F32(a.Ptr(1))[:g.Planes*g.OH*g.OW],
			h.I32(a.Ptr(2))[:g.Planes*g.OH*g.OW], a.Int32(11) != 0)
		return nil
	},
	"adaptive_avgpool2d_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		g := poolHostGeom(a, 2)
		pool.AdaptiveAvgForward(g, h.F32(a.Ptr(1))[:g.Planes*g.H*g.W], h.F32(a.Ptr(0))[:g.Planes*g.OH*g.OW])
		return nil
	},
	"adaptive_avgpool2d_back_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		g := poolHostGeom(a, 2)
		pool.AdaptiveAvgBackward(g, h.F32(a.Ptr(0))[:g.Planes*g.H*g.W], h.F32(a.Ptr(1))[:g.Planes*g.OH*g.OW], a.Int32(7) != 0)
		return nil
	},
}

// poolHostGeom reads the geometry parameters (planes, H, W, OH, OW)
// starting at parameter i.
func poolHostGeom(a cudatest.Args, i int) pool.Geom {
	return pool.Geom{Planes: int(a.Int64(i)), H: int(a.Int32(i + 1)), W: int(a.Int32(i + 2)), OH: int(a.Int32(i + 3)), OW: int(a.Int32(i + 4))}
}

// layerHost returns a cudatest.Host with the Go versions of pool.cu's and
// batchnorm.cu's kernels.
func layerHost() *cudatest.Host {
	h := cudatest.NewHost()
	for _, ks := range []map[string]cudatest.Kernel{poolHostKernels, bnHostKernels} {
		for name, k := range ks {
			h.Register(name, k)
		}
	}
	return h
}

// TestPoolOnHost runs the pooling tests on the backend's Go code with the
// kernels replaced by Go versions (cudatest.Host): the operands, offsets
// and launch parameters, on every go test.
func TestPoolOnHost(t *testing.T) {
	b, err := newBackend(layerHost(), 64)
	if err != nil {
		t.Fatal(err)
	}
	testPools(t, b)
}
