package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"unsafe"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/backendtest"
	"github.com/duel-ssl/duel/tensor/reference"
)

// hostGPU implements gpu on host memory, with Go versions of the kernels
// (their contracts as the .cu comments state them). It lets the Go side of
// the backend (layouts, permutations, offsets, scratch sizes, parameter
// order) run the conformance suite on machines without a GPU. Every access
// is bounds-checked against its allocation, and fresh allocations hold NaN
// bytes (cuMemAlloc does not zero), so reading memory nobody wrote shows.
type hostGPU struct {
	mu    sync.Mutex
	next  driver.DevicePtr
	alloc map[driver.DevicePtr][]byte
}

func newHostGPU() *hostGPU {
	return &hostGPU{next: 1 << 20, alloc: map[driver.DevicePtr][]byte{}}
}

func (h *hostGPU) allocate(n int) (driver.DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("hostGPU: alloc of %d bytes", n)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.next
	h.next += driver.DevicePtr((n+255)/256*256 + 256) // a gap between allocations
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	h.alloc[p] = b
	return p, nil
}

// bytesAt returns the bytes of the allocation holding p, from p to its end,
// checking that n of them exist.
func (h *hostGPU) bytesAt(p driver.DevicePtr, n int) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	bases := make([]driver.DevicePtr, 0, len(h.alloc))
	for b := range h.alloc {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	i := sort.Search(len(bases), func(i int) bool { return bases[i] > p }) - 1
	if i < 0 {
		return nil, fmt.Errorf("hostGPU: address %#x is in no allocation", p)
	}
	mem := h.alloc[bases[i]]
	off := int(p - bases[i])
	if off+n > len(mem) {
		return nil, fmt.Errorf("hostGPU: %d bytes at %#x overrun an allocation of %d bytes at %#x", n, p, len(mem), bases[i])
	}
	return mem[off:], nil
}

func (h *hostGPU) free(p driver.DevicePtr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.alloc[p]; !ok {
		panic(fmt.Sprintf("hostGPU: free of %#x, not an allocation", p))
	}
	delete(h.alloc, p)
}

func (h *hostGPU) zero(p driver.DevicePtr, n int) error {
	b, err := h.bytesAt(p, n)
	if err == nil {
		clear(b[:n])
	}
	return err
}

func (h *hostGPU) htod(dst driver.DevicePtr, src []byte) error {
	b, err := h.bytesAt(dst, len(src))
	if err == nil {
		copy(b, src)
	}
	return err
}

func (h *hostGPU) dtoh(dst []byte, src driver.DevicePtr) error {
	b, err := h.bytesAt(src, len(dst))
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (h *hostGPU) multiprocessors() int { return 2 }

// hostDev is a hostGPU seen as a gpu (its alloc is hostGPU.allocate).
type hostDev struct{ *hostGPU }

func (h hostDev) alloc(n int) (driver.DevicePtr, error) { return h.allocate(n) }

// f32 returns the float32 elements from p to the end of its allocation.
func (h *hostGPU) f32(p driver.DevicePtr) []float32 {
	b, err := h.bytesAt(p, 0)
	if err != nil {
		panic(err)
	}
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func (h *hostGPU) i32(p driver.DevicePtr) []int32 {
	f := h.f32(p)
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

func (h *hostGPU) f64(p driver.DevicePtr) []float64 {
	b, err := h.bytesAt(p, 0)
	if err != nil {
		panic(err)
	}
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

// decodeLayout reads the parameter block of a kc.Layout.
func decodeLayout(b []byte) kc.Layout {
	var l kc.Layout
	get := func() int64 { v := int64(binary.LittleEndian.Uint64(b)); b = b[8:]; return v }
	l.N, l.Rank = get(), get()
	for i := range l.Shape {
		l.Shape[i] = get()
	}
	for i := range l.Off {
		l.Off[i] = get()
	}
	for v := range l.Stride {
		for i := range l.Stride[v] {
			l.Stride[v][i] = get()
		}
	}
	return l
}

// offsets is elementwise.cu's offsets: the offset of element i in each view.
func offsets(l kc.Layout, i int64, nv int) [3]int64 {
	var o [3]int64
	copy(o[:], l.Off[:nv])
	for d := l.Rank - 1; d >= 0; d-- {
		c := i % l.Shape[d]
		i /= l.Shape[d]
		for v := range nv {
			o[v] += c * l.Stride[v][d]
		}
	}
	return o
}

// Launch runs the Go version of kernel.
func (h hostDev) Launch(m *kc.Module, kernel string, cfg kc.Config, a ...any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("hostGPU: kernel %s: %v", kernel, r)
		}
	}()
	p := func(i int) driver.DevicePtr { return a[i].(driver.DevicePtr) }
	i32 := func(i int) int32 { return a[i].(int32) }
	i64 := func(i int) int64 { return a[i].(int64) }
	f := func(i int) float32 { return a[i].(float32) }
	switch kernel {
	case "fill_f32":
		dst, l := h.f32(p(0)), decodeLayout(a[2].([]byte))
		for i := range l.N {
			dst[offsets(l, i, 1)[0]] = f(1)
		}
	case "unary_f32":
		op, par, dst, src, l := i32(0), f(1), h.f32(p(2)), h.f32(p(3)), decodeLayout(a[4].([]byte))
		for i := range l.N {
			o := offsets(l, i, 2)
			dst[o[0]] = float32(reference.Unary(tensor.UnaryOp(op), float64(src[o[1]]), float64(par)))
		}
	case "binary_f32":
		op, par, dst, x, y, l := i32(0), f(1), h.f32(p(2)), h.f32(p(3)), h.f32(p(4)), decodeLayout(a[5].([]byte))
		for i := range l.N {
			o := offsets(l, i, 3)
			u, v := float64(x[o[1]]), float64(y[o[2]])
			if op == opAXPY {
				dst[o[0]] = float32(u + float64(par)*v)
			} else {
				dst[o[0]] = float32(reference.Binary(tensor.BinaryOp(op), u, v))
			}
		}
	case "reduce_rows_f32":
		op, dst, src, rows, n := i32(0), h.f32(p(1)), h.f32(p(2)), i64(3), i64(4)
		for r := range rows {
			acc := map[int32]float64{2: math.Inf(-1), 3: math.Inf(1)}[op]
			for j := range n {
				v := float64(src[r*n+j])
				switch op {
				case 0, 1:
					acc += v
				case 2:
					acc = max(acc, v)
				case 3:
					acc = min(acc, v)
				}
			}
			if op == 1 {
				acc /= float64(n)
			}
			dst[r] = float32(acc)
		}
	case "argmax_rows_f32":
		dst, src, rows, n := h.i32(p(0)), h.f32(p(1)), i64(2), i64(3)
		for r := range rows {
			best, bi := math.Inf(-1), -1
			for j := range n {
				if v := float64(src[r*n+j]); bi < 0 || v > best {
					best, bi = v, int(j)
				}
			}
			dst[r] = int32(bi)
		}
	case "sgemm_f32":
		ta, tb, M, N, K, alpha := i32(0) != 0, i32(1) != 0, int64(i32(2)), int64(i32(3)), int64(i32(4)), float64(f(5))
		A, lda, sa, B, ldb, sb := h.f32(p(6)), i64(7), i64(8), h.f32(p(9)), i64(10), i64(11)
		beta, C, ldc, sc, batch := float64(f(12)), h.f32(p(13)), i64(14), i64(15), int64(i32(16))
		for bz := range batch {
			for i := range M {
				for j := range N {
					var s float64
					for q := range K {
						var x, y float32
						if ta {
							x = A[bz*sa+q*lda+i]
						} else {
							x = A[bz*sa+i*lda+q]
						}
						if tb {
							y = B[bz*sb+j*ldb+q]
						} else {
							y = B[bz*sb+q*ldb+j]
						}
						s += float64(x) * float64(y)
					}
					c := &C[bz*sc+i*ldc+j]
					v := alpha * s
					if beta != 0 {
						v += beta * float64(*c)
					}
					*c = float32(v)
				}
			}
		}
	case "im2col_f32", "col2im_f32":
		g := tensor.ConvGeom{C: int(i32(2)), H: int(i32(3)), W: int(i32(4)), KH: int(i32(5)), KW: int(i32(6)),
			StrideH: int(i32(7)), StrideW: int(i32(8)), PadH: int(i32(9)), PadW: int(i32(10))}
		if g.OutH() != int(i32(11)) || g.OutW() != int(i32(12)) {
			return fmt.Errorf("hostGPU: %s: output %dx%d for geometry %+v", kernel, i32(11), i32(12), g)
		}
		dst, src := h.f32(p(0)), h.f32(p(1))
		if kernel == "im2col_f32" {
			reference.Backend{}.Im2Col(tensor.Buffer{Host: dst}, 0, tensor.Buffer{Host: src}, 0, g)
		} else {
			reference.Backend{}.Col2Im(tensor.Buffer{Host: dst}, 0, tensor.Buffer{Host: src}, 0, g)
		}
	case "duel_grid":
		n := i64(1)
		x := h.f32(p(0))[:n]
		duelGridHost(h.f32(p(2))[:n], x)
	case "duel_scores":
		duelScoresHost(h.f64(p(3)), h.f32(p(0)), int(i64(1)), int(i32(2)))
	case "duel_permute":
		src, lds, kept, k, dst, ldd := h.f32(p(0)), i64(1), h.i32(p(2)), int64(i32(3)), h.f32(p(4)), i64(5)
		for r := range k {
			for c := range k {
				dst[r*ldd+c] = src[int64(kept[r])*lds+int64(kept[c])]
			}
		}
	case "duel_gather_rows":
		src, kept, k, z, dst := h.f32(p(0)), h.i32(p(1)), int(i32(2)), int(i32(3)), h.f32(p(4))
		for r := range k {
			copy(dst[r*z:(r+1)*z], src[int(kept[r])*z:(int(kept[r])+1)*z])
		}
	case "duel_select_shared", "duel_select_global":
		out := 6 // evicted, kept, scoreOut
		if kernel == "duel_select_global" {
			out = 8
			if cfg.Shared != 0 {
				return fmt.Errorf("hostGPU: duel_select_global launched with %d bytes of shared memory", cfg.Shared)
			}
		} else if want := 9 * int(i32(2)+i32(3)); cfg.Shared < want {
			return fmt.Errorf("hostGPU: duel_select_shared launched with %d bytes of shared memory, needs %d", cfg.Shared, want)
		}
		k, b := int(i32(2)), int(i32(3))
		duelSelectHost(h.f32(p(0)), int(i64(1)), k, b, i32(4) != 0, h.f64(p(5))[:k],
			h.i32(p(out))[:b], h.i32(p(out + 1))[:k], h.f64(p(out + 2))[:k])
	default:
		return fmt.Errorf("hostGPU: no Go version of kernel %s", kernel)
	}
	return nil
}

// TestBackendOnHost runs the conformance suite on the CUDA backend's Go
// code with the kernels replaced by Go versions (hostGPU): this checks the
// layouts, axis permutations, offsets and launch parameters without a GPU.
func TestBackendOnHost(t *testing.T) {
	b, err := newBackend(hostDev{newHostGPU()}, 64)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, b)
}

// TestDUELUpdateOnHost checks DUELUpdate's marshalling (buffer sizes,
// offsets, parameter order, copies) with duel.cu's kernels replaced by
// their Go transcriptions.
func TestDUELUpdateOnHost(t *testing.T) {
	g := hostDev{newHostGPU()}
	stream(t, "hostgpu", duelCases, func(mem, batch []float32, z int, opt DUELOptions) (DUELResult, error) {
		return duelUpdate(g, mem, batch, z, opt)
	})
}
