package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// testLosses checks BYOL and Barlow Twins of be (losses.cu and the
// products) against the CPU backend's (kernels/loss): the losses, Barlow
// Twins' kept normalised views and ∂L/∂C, and the gradients of both views
// (each alone and both) times a seed on the device, on single rows, odd
// sizes, views near zero (BYOL's eps) and dimensions larger than a block.
func testLosses(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.LossBackend)
	r := rand.New(rand.NewPCG(9, 17))
	worst := map[string]float64{}
	note := func(name string, e float64) { worst[name] = max(worst[name], e) }
	seed := []float32{0.8}
	for _, sh := range [][2]int{{1, 1}, {1, 7}, {2, 3}, {5, 33}, {16, 9}, {7, 300}, {40, 20}} {
		b, d := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", b, d), func(t *testing.T) {
			dseed := layerDevOp(be, seed, 1, 1)
			hs := layerHostOp(seed, 1)
			p, z := layerRandn(r, b*d, 1, 0.2), layerRandn(r, b*d, 1, -0.1)
			if b > 1 {
				for j := range d { // a row below eps
					p[d+j] *= 1e-10
				}
			}
			const eps = 1e-8
			hp, hz := layerHostOp(p, b, d), layerHostOp(z, b, d)
			dp, dz := layerDevOp(be, p, 3, b, d), layerDevOp(be, z, 0, b, d)
			wl := make([]float32, 1)
			cpu.BYOL(layerHostOp(wl, 1), hp, hz, eps)
			loss := layerDevOp(be, []float32{0}, 2, 1)
			be.BYOL(loss, dp, dz, eps)
			note("BYOL loss", closeErr(t, "BYOL loss", layerOut(be, loss), wl, 0, 1e-6))
			wdp, wdz := make([]float32, b*d), make([]float32, b*d)
			cpu.BYOLBack(layerHostOp(wdp, b, d), layerHostOp(wdz, b, d), hp, hz, hs, eps)
			gp, gz := layerDevOp(be, make([]float32, b*d), 1, b, d), layerDevOp(be, make([]float32, b*d), 0, b, d)
			be.BYOLBack(gp, gz, dp, dz, dseed, eps)
			note("BYOL dp", gradClose(t, "BYOL dp", layerOut(be, gp), wdp, 1e-6))
			note("BYOL dz", gradClose(t, "BYOL dz", layerOut(be, gz), wdz, 1e-6))
			gz2 := layerDevOp(be, make([]float32, b*d), 2, b, d)
			be.BYOLBack(tensor.Operand{}, gz2, dp, dz, dseed, eps)
			note("BYOL dz", gradClose(t, "BYOL dz alone", layerOut(be, gz2), wdz, 1e-6))

			if b < 2 {
				return // Barlow Twins' batch statistics need two samples
			}
			const lambda, beps = 0.0051, 1e-5
			z1, z2 := layerRandn(r, b*d, 2, 0.5), layerRandn(r, b*d, 1, -1)
			hz1, hz2 := layerHostOp(z1, b, d), layerHostOp(z2, b, d)
			wh1, wh2, wg := make([]float32, b*d), make([]float32, b*d), make([]float32, d*d)
			cpu.BarlowTwins(layerHostOp(wl, 1), layerHostOp(wg, d, d), layerHostOp(wh1, b, d), layerHostOp(wh2, b, d), hz1, hz2, lambda, beps)
			dz1, dz2 := layerDevOp(be, z1, 1, b, d), layerDevOp(be, z2, 4, b, d)
			h1, h2 := layerDevOp(be, make([]float32, b*d), 0, b, d), layerDevOp(be, make([]float32, b*d), 3, b, d)
			g := layerDevOp(be, make([]float32, d*d), 2, d, d)
			be.BarlowTwins(loss, g, h1, h2, dz1, dz2, lambda, beps)
			note("Barlow loss", closeErr(t, "BarlowTwins loss", layerOut(be, loss), wl, 0, 1e-5))
			note("Barlow h", gradClose(t, "BarlowTwins h1", layerOut(be, h1), wh1, 1e-6))
			note("Barlow h", gradClose(t, "BarlowTwins h2", layerOut(be, h2), wh2, 1e-6))
			note("Barlow g", gradClose(t, "BarlowTwins g", layerOut(be, g), wg, 1e-5))
			wd1, wd2 := make([]float32, b*d), make([]float32, b*d)
			cpu.BarlowTwinsBack(layerHostOp(wd1, b, d), layerHostOp(wd2, b, d), hz1, hz2, layerHostOp(wh1, b, d),
				layerHostOp(wh2, b, d), layerHostOp(wg, d, d), hs, beps)
			g1, g2 := layerDevOp(be, make([]float32, b*d), 0, b, d), layerDevOp(be, make([]float32, b*d), 5, b, d)
			// from the CPU's kept views and G: the gradients' own error
			hh1, hh2, hg := layerDevOp(be, wh1, 1, b, d), layerDevOp(be, wh2, 0, b, d), layerDevOp(be, wg, 0, d, d)
			be.BarlowTwinsBack(g1, g2, dz1, dz2, hh1, hh2, hg, dseed, beps)
			note("Barlow dz", gradClose(t, "BarlowTwins dz1", layerOut(be, g1), wd1, 1e-5))
			note("Barlow dz", gradClose(t, "BarlowTwins dz2", layerOut(be, g2), wd2, 1e-5))
			g3 := layerDevOp(be, make([]float32, b*d), 0, b, d)
			be.BarlowTwinsBack(tensor.Operand{}, g3, dz1, dz2, h1, h2, g, dseed, beps)
			note("Barlow dz (own G)", gradClose(t, "BarlowTwins dz2 alone, from its own G", layerOut(be, g3), wd2, 1e-5))
		})
	}
	t.Logf("largest differences from the CPU (losses relative, the rest relative to the largest element): %v", worst)
}

// TestLossesEmulated runs BYOL and Barlow Twins (losses.cu and the
// products) on the CPU emulator through the backend, against the CPU
// backend.
func TestLossesEmulated(t *testing.T) {
	onEmulator(t, testLosses)
}

// TestLossesKernel runs BYOL and Barlow Twins on the GPU against the CPU
// backend, at three block sizes.
func TestLossesKernel(t *testing.T) {
	onGPU(t, testLosses)
}

// TestLossesFakeDriver runs TestLossesKernel in a child process whose
// driver is the fake libcuda.
func TestLossesFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^TestLossesKernel$", "TestLossesKernel")
}
