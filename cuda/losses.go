package cuda

import (
	"fmt"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.LossBackend = (*Backend)(nil)

// viewDims returns the b×d shape of the view p, panicking unless it is a
// matrix.
func viewDims(op, name string, p tensor.Operand) (b, d int) {
	if len(p.Shape) != 2 {
		panic(fmt.Sprintf("cuda: Backend.%s: %s has shape %v, want b×d", op, name, p.Shape))
	}
	return p.Shape[0], p.Shape[1]
}

// byolStats queues byol_rows_f32 over the views and returns the per-row
// terms (b doubles) and statistics (3b doubles: the two norms and the
// cosine) in scratch memory of s.
func (be *Backend) byolStats(op string, s *scratch, pm, zm matrix, eps float64) (term, stat driver.DevicePtr) {
	b, d := pm.rows, pm.cols
	term, err := s.alloc(8 * b)
	must(op, err)
	stat, err = s.alloc(24 * b)
	must(op, err)
	if b > 0 {
		be.queued(op, kc.ByolRowsF32(be.g, be.lanes(b), term, stat, be.matPtr(op, pm), be.matPtr(op, zm), int32(b), int32(d), eps))
	}
	return term, stat
}

// BYOL sets the one element of loss to (1/b) Σᵢ (2 - 2·cos(pᵢ, zᵢ)), each
// norm bounded below by eps (losses.cu: byol_rows_f32 one block per row in
// double, loss_total_f64).
func (be *Backend) BYOL(loss, p, z tensor.Operand, eps float64) {
	const op = "BYOL"
	b, d := viewDims(op, "p", p)
	pm, zm := be.denseMatrix(op, "p", p, b, d, false), be.denseMatrix(op, "z", z, b, d, false)
	lm := be.scalar(op, "loss", loss)
	s := &scratch{mem: be.mem}
	defer s.release()
	term, _ := be.byolStats(op, s, pm, zm, eps)
	be.queued(op, kc.LossTotalF64(be.g, be.oneBlock(), be.matPtr(op, lm), term, int32(b), float64(b)))
}

// BYOLBack sets dp and dz, each unless it is the zero Operand, to the
// gradients of BYOL(p, z) times the one element of seed (the statistics
// recomputed by byol_rows_f32, then byol_grad_f32).
func (be *Backend) BYOLBack(dp, dz, p, z, seed tensor.Operand, eps float64) {
	const op = "BYOLBack"
	b, d := viewDims(op, "p", p)
	pm, zm := be.denseMatrix(op, "p", p, b, d, false), be.denseMatrix(op, "z", z, b, d, false)
	sp := be.dense(op, "seed", seed, 1)
	if b*d == 0 {
		return
	}
	s := &scratch{mem: be.mem}
	defer s.release()
	_, stat := be.byolStats(op, s, pm, zm, eps)
	for _, g := range []struct {
		name string
		out  tensor.Operand
		x, y matrix
		wrtZ int32
	}{{"dp", dp, pm, zm, 0}, {"dz", dz, zm, pm, 1}} {
		if tensor.IsZeroOperand(g.out) {
			continue
		}
		gm := be.denseMatrix(op, g.name, g.out, b, d, false)
		be.queued(op, kc.ByolGradF32(be.g, be.grid(int64(b*d)), be.matPtr(op, gm), be.matPtr(op, g.x), be.matPtr(op, g.y),
			stat, sp, int32(b), int32(d), g.wrtZ))
	}
}

// columns returns the launch configuration of losses.cu's per-column
// kernels: one thread per column.
func (be *Backend) columns(d int) kc.Config { return be.grid(int64(d)) }

// BarlowTwins normalises the views' columns (barlow_norm_f32, one thread
// per column summing the rows in the CPU's order), forms C = ẑ1ᵀ ẑ2 / b
// with the backend's Gemm into g, and turns it into ∂L/∂C with the loss's
// terms per row (barlow_loss_f32), summed by loss_total_f64.
func (be *Backend) BarlowTwins(loss, g, h1, h2, z1, z2 tensor.Operand, lambda, eps float64) {
	const op = "BarlowTwins"
	b, d := viewDims(op, "z1", z1)
	z1m, z2m := be.denseMatrix(op, "z1", z1, b, d, false), be.denseMatrix(op, "z2", z2, b, d, false)
	h1m, h2m := be.denseMatrix(op, "h1", h1, b, d, false), be.denseMatrix(op, "h2", h2, b, d, false)
	gm := be.denseMatrix(op, "g", g, d, d, false)
	lm := be.scalar(op, "loss", loss)
	s := &scratch{mem: be.mem}
	defer s.release()
	std, err := s.alloc(8 * d)
	must(op, err)
	term, err := s.alloc(8 * d)
	must(op, err)
	if d > 0 {
		for _, v := range [][2]matrix{{h1m, z1m}, {h2m, z2m}} {
			be.queued(op, kc.BarlowNormF32(be.g, be.columns(d), be.matPtr(op, v[0]), std, be.matPtr(op, v[1]),
				int32(b), int32(d), eps, 1))
		}
		be.gemmRows(true, false, 1/float32(b), h1m, h2m, false, gm, b)
		be.queued(op, kc.BarlowLossF32(be.g, be.lanes(d), term, be.matPtr(op, gm), int32(d), lambda))
	}
	be.queued(op, kc.LossTotalF64(be.g, be.oneBlock(), be.matPtr(op, lm), term, int32(d), 1))
}

// BarlowTwinsBack sets dz1 and dz2, each unless it is the zero Operand, to
// the gradients of BarlowTwins times the one element of seed: the product
// of the other view with Gᵀ (dz1) or G (dz2) by the backend's Gemm, then
// barlow_grad_f32 (scaled by seed/b, through each column's normalisation,
// its standard deviation recomputed by barlow_norm_f32).
func (be *Backend) BarlowTwinsBack(dz1, dz2, z1, z2, h1, h2, g, seed tensor.Operand, eps float64) {
	const op = "BarlowTwinsBack"
	b, d := viewDims(op, "z1", z1)
	z1m, z2m := be.denseMatrix(op, "z1", z1, b, d, false), be.denseMatrix(op, "z2", z2, b, d, false)
	h1m, h2m := be.denseMatrix(op, "h1", h1, b, d, false), be.denseMatrix(op, "h2", h2, b, d, false)
	gm := be.denseMatrix(op, "g", g, d, d, false)
	sp := be.dense(op, "seed", seed, 1)
	if b*d == 0 {
		return
	}
	s := &scratch{mem: be.mem}
	defer s.release()
	std, err := s.alloc(8 * d)
	must(op, err)
	ghb := be.Alloc(b * d) // the raw product; back to the cache once the kernels are queued
	defer be.Release(ghb)
	gh := matrix{ghb, 0, b, d}
	for _, v := range []struct {
		name     string
		out      tensor.Operand
		z, h, ot matrix
		first    bool
	}{{"dz1", dz1, z1m, h1m, h2m, true}, {"dz2", dz2, z2m, h2m, h1m, false}} {
		if tensor.IsZeroOperand(v.out) {
			continue
		}
		dm := be.denseMatrix(op, v.name, v.out, b, d, false)
		be.queued(op, kc.BarlowNormF32(be.g, be.columns(d), be.dummy, std, be.matPtr(op, v.z), int32(b), int32(d), eps, 0))
		// gh = other · op(G), alpha 1 (barlow_grad_f32 scales it by seed/b)
		be.gemmRows(false, v.first, 1, v.ot, gm, false, gh, d)
		be.queued(op, kc.BarlowGradF32(be.g, be.columns(d), be.matPtr(op, dm), be.matPtr(op, gh), be.matPtr(op, v.h), std, sp, int32(b), int32(d)))
	}
}
