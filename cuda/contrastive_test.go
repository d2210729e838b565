package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// unitRows returns rows×d normal values with every row scaled to unit
// norm (the losses' usual inputs).
func unitRows(r *rand.Rand, rows, d int) []float32 {
	x := layerRandn(r, rows*d, 1, 0)
	for i := range rows {
		var s float64
		for _, v := range x[i*d : (i+1)*d] {
			s += float64(v) * float64(v)
		}
		for j := range d {
			x[i*d+j] = float32(float64(x[i*d+j]) / max(math.Sqrt(s), 1e-12))
		}
	}
	return x
}

// gradClose checks got against want within atol = tol·max|want| plus
// rtol = tol relative, and returns the largest difference relative to
// max|want|.
func gradClose(t testing.TB, what string, got, want []float32, tol float64) float64 {
	t.Helper()
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	worst := 0.0
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if !(d <= tol*(scale+math.Abs(float64(want[i])))) {
			t.Fatalf("%s: element %d = %v, want %v (CPU; largest |want| %v)", what, i, got[i], want[i], scale)
		}
		if scale > 0 {
			worst = max(worst, d/scale)
		}
	}
	return worst
}

// contrastiveCase is one configuration of the contrastive tests: b
// anchors (NT-Xent: 2b), dimension d, n memory negatives.
type contrastiveCase struct {
	b, d, n  int
	eps      float64
	batchNeg bool
}

var contrastiveCases = []contrastiveCase{
	{1, 1, 3, 1, true}, {1, 5, 0, 0.5, true}, {3, 5, 0, 1, true}, {3, 5, 4, 0, false}, {4, 33, 7, 0.5, false},
	{17, 33, 0, 0, true}, {17, 9, 40, 1, true}, {40, 3, 5, 0.25, true},
}

// testContrastive checks InfoNCE and NT-Xent of be (Gemm plus
// contrastive.cu) against the CPU backend's (kernels/loss): the loss, the
// kept derivatives and the gradients times a seed on the device, with and
// without memory negatives, batch negatives on and off, eps 0, 1/4, 1/2
// and 1, single anchors and odd sizes.
func testContrastive(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.ContrastiveBackend)
	r := rand.New(rand.NewPCG(7, 31))
	worst := map[string]float64{}
	note := func(name string, e float64) { worst[name] = max(worst[name], e) }
	const tau, seedV = 0.2, 0.7
	hOpt := func(d []float32, shape ...int) tensor.Operand {
		if len(d) == 0 {
			return tensor.Operand{}
		}
		return layerHostOp(d, shape...)
	}
	dOpt := func(d []float32, off int, shape ...int) tensor.Operand {
		if len(d) == 0 {
			return tensor.Operand{}
		}
		return layerDevOp(be, d, off, shape...)
	}
	for _, c := range contrastiveCases {
		a := tensor.ContrastArgs{Tau: tau, Eps: c.eps, BatchNegatives: c.batchNeg}
		t.Run(fmt.Sprintf("b%d_d%d_n%d_eps%g_batch%v", c.b, c.d, c.n, c.eps, c.batchNeg), func(t *testing.T) {
			b, d, n := c.b, c.d, c.n
			seed := []float32{seedV}
			neg := unitRows(r, n, d)
			dneg, dseed := dOpt(neg, 1, n, d), layerDevOp(be, seed, 2, 1)

			// InfoNCE
			q, k := unitRows(r, b, d), unitRows(r, b, d)
			wl, wgs, wge := make([]float32, 1), make([]float32, b*b), make([]float32, b*n)
			cpu.InfoNCE(layerHostOp(wl, 1), layerHostOp(wgs, b, b), hOpt(wge, b, n), layerHostOp(q, b, d), layerHostOp(k, b, d), hOpt(neg, n, d), a)
			loss, gs, ge := layerDevOp(be, []float32{0}, 1, 1), layerDevOp(be, make([]float32, b*b), 3, b, b), dOpt(make([]float32, b*n), 0, b, n)
			dq, dk := layerDevOp(be, q, 2, b, d), layerDevOp(be, k, 0, b, d)
			be.InfoNCE(loss, gs, ge, dq, dk, dneg, a)
			note("InfoNCE loss", closeErr(t, "InfoNCE loss", layerOut(be, loss), wl, 0, 1e-5))
			note("InfoNCE gs", gradClose(t, "InfoNCE gs", layerOut(be, gs), wgs, 1e-5))
			if n > 0 {
				note("InfoNCE ge", gradClose(t, "InfoNCE ge", layerOut(be, ge), wge, 1e-5))
			}
			wdq, wdk := make([]float32, b*d), make([]float32, b*d)
			cpu.InfoNCEBack(layerHostOp(wdq, b, d), layerHostOp(wdk, b, d), layerHostOp(wgs, b, b), hOpt(wge, b, n),
				layerHostOp(q, b, d), layerHostOp(k, b, d), hOpt(neg, n, d), layerHostOp(seed, 1), tau)
			gq, gk := layerDevOp(be, make([]float32, b*d), 1, b, d), layerDevOp(be, make([]float32, b*d), 4, b, d)
			be.InfoNCEBack(gq, gk, gs, ge, dq, dk, dneg, dseed, tau)
			note("InfoNCE dq", gradClose(t, "InfoNCE dq", layerOut(be, gq), wdq, 1e-5))
			note("InfoNCE dk", gradClose(t, "InfoNCE dk", layerOut(be, gk), wdk, 1e-5))
			gq2 := layerDevOp(be, make([]float32, b*d), 0, b, d)
			be.InfoNCEBack(gq2, tensor.Operand{}, gs, ge, dq, dk, dneg, dseed, tau)
			note("InfoNCE dq", gradClose(t, "InfoNCE dq alone", layerOut(be, gq2), wdq, 1e-5))

			// NT-Xent
			m := 2 * b
			z := unitRows(r, m, d)
			wl2, wgs2, wge2 := make([]float32, 1), make([]float32, m*m), make([]float32, m*n)
			cpu.NTXent(layerHostOp(wl2, 1), layerHostOp(wgs2, m, m), hOpt(wge2, m, n), layerHostOp(z, m, d), hOpt(neg, n, d), a)
			gs2, ge2 := layerDevOp(be, make([]float32, m*m), 2, m, m), dOpt(make([]float32, m*n), 5, m, n)
			dz := layerDevOp(be, z, 3, m, d)
			be.NTXent(loss, gs2, ge2, dz, dneg, a)
			note("NTXent loss", closeErr(t, "NTXent loss", layerOut(be, loss), wl2, 0, 1e-5))
			note("NTXent gs", gradClose(t, "NTXent gs", layerOut(be, gs2), wgs2, 1e-5))
			if n > 0 {
				note("NTXent ge", gradClose(t, "NTXent ge", layerOut(be, ge2), wge2, 1e-5))
			}
			wdz := make([]float32, m*d)
			cpu.NTXentBack(layerHostOp(wdz, m, d), layerHostOp(wgs2, m, m), hOpt(wge2, m, n), layerHostOp(z, m, d),
				hOpt(neg, n, d), layerHostOp(seed, 1), tau)
			gz := layerDevOp(be, make([]float32, m*d), 1, m, d)
			be.NTXentBack(gz, gs2, ge2, dz, dneg, dseed, tau)
			note("NTXent dz", gradClose(t, "NTXent dz", layerOut(be, gz), wdz, 1e-5))
		})
	}
	t.Logf("largest differences from the CPU (losses relative, the rest relative to the largest element): %v", worst)
}

// TestContrastiveEmulated runs InfoNCE and NT-Xent (contrastive.cu and
// the products) on the CPU emulator through the backend, against the CPU
// backend.
func TestContrastiveEmulated(t *testing.T) {
	onEmulator(t, testContrastive)
}

// TestContrastiveKernel runs InfoNCE and NT-Xent on the GPU against the
// CPU backend, at three block sizes.
func TestContrastiveKernel(t *testing.T) {
	onGPU(t, testContrastive)
}

// TestContrastiveFakeDriver runs TestContrastiveKernel in a child process
// whose driver is the fake libcuda.
func TestContrastiveFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^TestContrastiveKernel$", "TestContrastiveKernel")
}
