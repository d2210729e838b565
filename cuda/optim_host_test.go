package cuda

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// optimHostSGD is optim.cu's opt_sgd_elem over n elements in Go.
func optimHostSGD(h *cudatest.Host, a cudatest.Args, n int, lr, decay, scale, mom, damp float64, nesterov, first bool) {
	w, g := h.F32(a.Ptr(0))[:n], h.F32(a.Ptr(1))[:n]
	var buf []float32
	if mom != 0 {
		buf = h.F32(a.Ptr(2))[:n]
	}
	for j := range w {
		optimHostSGDElem(w, g, buf, j, lr, decay, scale, mom, damp, nesterov, first)
	}
}

// optimHostSGDElem is optim.cu's opt_sgd_elem in Go. Its products are
// converted explicitly, as the kernel rounds each (rn_dmul), so that no Go
// compiler fuses them (GOAMD64=v3 and arm64 would).
func optimHostSGDElem(w, g, buf []float32, j int, lr, decay, scale, mom, damp float64, nesterov, first bool) {
	d := float64((float64(g[j]) + float64(decay*float64(w[j]))) * scale)
	if mom != 0 {
		v := d
		if !first {
			v = float64(mom*float64(buf[j])) + float64(damp*d)
		}
		buf[j] = float32(v)
		if nesterov {
			d += float64(mom * v)
		} else {
			d = v
		}
	}
	w[j] = float32(float64(w[j]) - float64(lr*d))
}

// optimHostAdamElem is optim.cu's opt_adam_elem in Go, its products
// converted explicitly as optimHostSGDElem's.
func optimHostAdamElem(w, g, m, v []float32, j int, b1, b2, eps, step, inv, decay, l2 float64) {
	x := float64(float64(w[j]) * decay)
	gj := float64(g[j]) + float64(l2*x)
	mj := float64(b1*float64(m[j])) + float64((1-b1)*gj)
	vj := float64(b2*float64(v[j])) + float64(float64((1-b2)*gj)*gj)
	m[j], v[j] = float32(mj), float32(vj)
	w[j] = float32(x - float64(step*mj)/(float64(math.Sqrt(vj)*inv)+eps))
}

// optimHostMulti is the walk of optim.cu's multi-tensor kernels over the
// table at argument 0 (T, chunk and chunks at 1-3) of P columns: chunk by
// chunk, each one's tensor found among the chunk starts as multiSpan
// finds it, elem on each of its elements with the tensor's columns.
func optimHostMulti(h *cudatest.Host, a cudatest.Args, P int, elem func(cols [][]float32, j int)) {
	T, chunk, chunks := int(a.Int32(1)), a.Int64(2), a.Int64(3)
	tab := h.U64(a.Ptr(0))[:(P+2)*T+1]
	start := tab[(P+1)*T:]
	if int64(start[T]) != chunks {
		panic(fmt.Sprintf("multi-tensor table: %d chunks, launched with %d", start[T], chunks))
	}
	for c := int64(0); c < chunks; c++ {
		t := sort.Search(T, func(i int) bool { return int64(start[i]) > c }) - 1
		n := int64(tab[P*T+t])
		lo := (c - int64(start[t])) * chunk
		hi := min(lo+chunk, n)
		cols := make([][]float32, P)
		for p := range cols {
			cols[p] = h.F32(driver.DevicePtr(tab[p*T+t]))
		}
		for j := lo; j < hi; j++ {
			elem(cols, int(j))
		}
	}
}

// optimHostKernels are optim.cu's kernels on a cudatest.Host (their
// arithmetic transcribed to Go; the norms of lars_norms_f32 summed in
// order within each part), with the launch parameters of kernels/cuda's
// generated launchers.
var optimHostKernels = map[string]cudatest.Kernel{
	"sgd_step_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		optimHostSGD(h, a, int(a.Int64(3)), a[4].(float64), a[5].(float64), 1, a[6].(float64), a[7].(float64),
			a.Int32(8) != 0, a.Int32(9) != 0)
		return nil
	},
	"lars_norms_f32": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		n, parts := int(a.Int64(3)), cfg.Grid.X
		part, w, g := h.F64(a.Ptr(0))[:2*parts], h.F32(a.Ptr(1))[:n], h.F32(a.Ptr(2))[:n]
		chunk := (n + parts - 1) / parts
		for q := range parts {
			lo, hi := min(q*chunk, n), min(q*chunk+chunk, n)
			var sw, sg float64
			for j := lo; j < hi; j++ {
				sw += float64(w[j]) * float64(w[j])
				sg += float64(g[j]) * float64(g[j])
			}
			part[2*q], part[2*q+1] = sw, sg
		}
		return nil
	},
	"lars_step_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		parts, n := int(a.Int32(4)), int(a.Int64(5))
		lr, wd, mom, damp, eta, eps := a[6].(float64), a[7].(float64), a[8].(float64), a[9].(float64), a[10].(float64), a[11].(float64)
		scale, decay := 1.0, 0.0
		if a.Int32(15) == 0 {
			part := h.F64(a.Ptr(3))[:2*parts]
			var sw, sg float64
			for q := range parts {
				sw += part[2*q]
				sg += part[2*q+1]
			}
			if pn, gn := math.Sqrt(sw), math.Sqrt(sg); pn != 0 && gn != 0 {
				scale = eta * pn / (gn + pn*wd + eps)
				if a.Int32(14) != 0 {
					scale = math.Min(scale/lr, 1)
				}
				decay = wd
			}
		}
		optimHostSGD(h, a, n, lr, decay, scale, mom, damp, a.Int32(12) != 0, a.Int32(13) != 0)
		return nil
	},
	"adam_step_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		n := int(a.Int64(4))
		w, g, m, v := h.F32(a.Ptr(0))[:n], h.F32(a.Ptr(1))[:n], h.F32(a.Ptr(2))[:n], h.F32(a.Ptr(3))[:n]
		b1, b2, eps, step, inv, decay, l2 := a[5].(float64), a[6].(float64), a[7].(float64), a[8].(float64), a[9].(float64), a[10].(float64), a[11].(float64)
		for j := range w {
			optimHostAdamElem(w, g, m, v, j, b1, b2, eps, step, inv, decay, l2)
		}
		return nil
	},
	"ema_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		n := int(a.Int64(2))
		t, o := h.F32(a.Ptr(0))[:n], h.F32(a.Ptr(1))[:n]
		mf, of := a.Float32(3), a.Float32(4)
		for j := range t {
			t[j] = float32(mf*t[j]) + float32(of*o[j])
		}
		return nil
	},
	"sgd_multi_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		lr, wd, mom, damp := a[4].(float64), a[5].(float64), a[6].(float64), a[7].(float64)
		nesterov, first := a.Int32(8) != 0, a.Int32(9) != 0
		optimHostMulti(h, a, 3, func(c [][]float32, j int) {
			optimHostSGDElem(c[0], c[1], c[2], j, lr, wd, 1, mom, damp, nesterov, first)
		})
		return nil
	},
	"adam_multi_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		b1, b2, eps, step, inv, decay, l2 := a[4].(float64), a[5].(float64), a[6].(float64), a[7].(float64), a[8].(float64), a[9].(float64), a[10].(float64)
		optimHostMulti(h, a, 4, func(c [][]float32, j int) {
			optimHostAdamElem(c[0], c[1], c[2], c[3], j, b1, b2, eps, step, inv, decay, l2)
		})
		return nil
	},
	"ema_multi_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		mf, of := a.Float32(4), a.Float32(5)
		optimHostMulti(h, a, 2, func(c [][]float32, j int) { c[0][j] = float32(mf*c[0][j]) + float32(of*c[1][j]) })
		return nil
	},
	"zero_multi_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		optimHostMulti(h, a, 1, func(c [][]float32, j int) { c[0][j] = 0 })
		return nil
	},
}

// TestOptimizerOnHost runs the optimizer tests on the backend's Go code
// with the kernels replaced by Go versions (cudatest.Host): the operands,
// offsets, scratch and launch parameters, on every go test.
func TestOptimizerOnHost(t *testing.T) {
	h := cudatest.NewHost()
	for name, k := range optimHostKernels {
		h.Register(name, k)
	}
	b, err := newBackend(h, 64)
	if err != nil {
		t.Fatal(err)
	}
	testOptimizers(t, b)
}

// TestMultiOptimizerOnHost runs the multi-tensor tests on the backend's Go
// code with the kernels replaced by Go versions (cudatest.Host): the
// table's layout, upload and chunks, on every go test; and checks that
// each call is one launch.
func TestMultiOptimizerOnHost(t *testing.T) {
	h := cudatest.NewHost()
	launches := map[string]int{}
	for name, k := range optimHostKernels {
		h.Register(name, func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
			launches[name]++
			return k(h, cfg, a)
		})
	}
	b, err := newBackend(h, 64)
	if err != nil {
		t.Fatal(err)
	}
	testMultiOptimizers(t, b)
	// Each case: three calls of one launch; the empty calls launch nothing.
	want := map[string]int{"sgd_multi_f32": 9, "adam_multi_f32": 6, "ema_multi_f32": 3, "zero_multi_f32": 3}
	for name, n := range launches {
		if n != want[name] {
			t.Errorf("%s launched %d times, want %d", name, n, want[name])
		}
	}
	if len(launches) != len(want) {
		t.Errorf("launches %v, want %v", launches, want)
	}
}
