package cudatest

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"
	"unsafe"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/reference"
)

// Host implements cuda.GPU on host memory, with Go versions of the
// kernels. Every access is bounds-checked against its allocation, and
// fresh allocations hold NaN bytes (cuMemAlloc does not zero), so reading
// memory nobody wrote shows. Its methods are safe for concurrent use.
type Host struct {
	mu      sync.Mutex
	next    driver.DevicePtr
	allocs  map[driver.DevicePtr][]byte
	kernels map[string]Kernel
}

// Kernel is a Go version of a kernel, run by Host.Launch with the launch's
// configuration and parameters.
type Kernel func(h *Host, cfg kc.Config, a Args) error

// Args are a launch's kernel parameters, in order.
type Args []any

// Ptr returns parameter i, a device pointer.
func (a Args) Ptr(i int) driver.DevicePtr { return a[i].(driver.DevicePtr) }

// Int32 returns parameter i, an int32.
func (a Args) Int32(i int) int32 { return a[i].(int32) }

// Int64 returns parameter i, an int64.
func (a Args) Int64(i int) int64 { return a[i].(int64) }

// Float32 returns parameter i, a float32.
func (a Args) Float32(i int) float32 { return a[i].(float32) }

// Layout returns parameter i, a kc.Layout passed by value.
func (a Args) Layout(i int) kc.Layout { return decodeLayout(a[i].([]byte)) }

// NewHost returns a Host with Go versions of the kernels of
// elementwise.cu, reduce.cu, sgemm.cu and im2col.cu.
func NewHost() *Host {
	h := &Host{next: 1 << 20, allocs: map[driver.DevicePtr][]byte{}, kernels: map[string]Kernel{}}
	for name, k := range tensorKernels {
		h.kernels[name] = k
	}
	return h
}

// Register adds (or replaces) the Go version of kernel name.
func (h *Host) Register(name string, k Kernel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kernels[name] = k
}

// Alloc returns n bytes of host memory standing for device memory, filled
// with 0xff bytes (NaN floats), at an address with a gap after it.
func (h *Host) Alloc(n int) (driver.DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cudatest: alloc of %d bytes, expected a positive size", n)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.next
	h.next += driver.DevicePtr((n+255)/256*256 + 256) // a gap between allocations
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	h.allocs[p] = b
	return p, nil
}

// Live returns the number of allocations not freed.
func (h *Host) Live() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.allocs)
}

// bytesAt returns the bytes of the allocation holding p, from p to its end,
// checking that n of them exist.
func (h *Host) bytesAt(p driver.DevicePtr, n int) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	bases := make([]driver.DevicePtr, 0, len(h.allocs))
	for b := range h.allocs {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	i := sort.Search(len(bases), func(i int) bool { return bases[i] > p }) - 1
	if i < 0 {
		return nil, fmt.Errorf("cudatest: address %#x is in no allocation", p)
	}
	mem := h.allocs[bases[i]]
	off := int(p - bases[i])
	if off+n > len(mem) {
		return nil, fmt.Errorf("cudatest: %d bytes at %#x overrun an allocation of %d bytes at %#x", n, p, len(mem), bases[i])
	}
	return mem[off:], nil
}

// Free frees an allocation; it panics when p is not one.
func (h *Host) Free(p driver.DevicePtr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.allocs[p]; !ok {
		panic(fmt.Sprintf("cudatest: free of %#x, not an allocation", p))
	}
	delete(h.allocs, p)
}

// Zero sets n bytes at p to 0.
func (h *Host) Zero(p driver.DevicePtr, n int) error {
	b, err := h.bytesAt(p, n)
	if err == nil {
		clear(b[:n])
	}
	return err
}

// CopyToDevice copies src to dst.
func (h *Host) CopyToDevice(dst driver.DevicePtr, src []byte) error {
	b, err := h.bytesAt(dst, len(src))
	if err == nil {
		copy(b, src)
	}
	return err
}

// CopyFromDevice copies src into dst.
func (h *Host) CopyFromDevice(dst []byte, src driver.DevicePtr) error {
	b, err := h.bytesAt(src, len(dst))
	if err == nil {
		copy(dst, b)
	}
	return err
}

// Synchronize returns nil: the work is done when its call returns.
func (h *Host) Synchronize() error { return nil }

// Multiprocessors returns 2.
func (h *Host) Multiprocessors() int { return 2 }

// F32 returns the float32 elements from p to the end of its allocation;
// it panics when p is in no allocation.
func (h *Host) F32(p driver.DevicePtr) []float32 {
	b, err := h.bytesAt(p, 0)
	if err != nil {
		panic(err)
	}
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// I32 returns the int32 elements from p to the end of its allocation.
func (h *Host) I32(p driver.DevicePtr) []int32 {
	f := h.F32(p)
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

// F64 returns the float64 elements from p to the end of its allocation.
func (h *Host) F64(p driver.DevicePtr) []float64 {
	b, err := h.bytesAt(p, 0)
	if err != nil {
		panic(err)
	}
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

// U64 returns the uint64 elements from p to the end of its allocation.
func (h *Host) U64(p driver.DevicePtr) []uint64 {
	f := h.F64(p)
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

// Launch runs the Go version of kernel; a panic inside it (an access out
// of its allocation) is returned as an error.
func (h *Host) Launch(m *kc.Module, kernel string, cfg kc.Config, a ...any) (err error) {
	h.mu.Lock()
	k := h.kernels[kernel]
	h.mu.Unlock()
	if k == nil {
		return fmt.Errorf("cudatest: no Go version of kernel %s", kernel)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cudatest: kernel %s: %v", kernel, r)
		}
	}()
	return k(h, cfg, Args(a))
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

// OpAXPY is binary_f32's op a + p*b (the CUDA backend's AddScaled).
const OpAXPY = 6

// tensorKernels are the Go versions of the tensor backend's kernels.
var tensorKernels = map[string]Kernel{
	"fill_f32": func(h *Host, _ kc.Config, a Args) error {
		dst, l := h.F32(a.Ptr(0)), a.Layout(2)
		for i := range l.N {
			dst[offsets(l, i, 1)[0]] = a.Float32(1)
		}
		return nil
	},
	"unary_f32": func(h *Host, _ kc.Config, a Args) error {
		op, par, dst, src, l := a.Int32(0), a.Float32(1), h.F32(a.Ptr(2)), h.F32(a.Ptr(3)), a.Layout(4)
		for i := range l.N {
			o := offsets(l, i, 2)
			dst[o[0]] = float32(reference.Unary(tensor.UnaryOp(op), float64(src[o[1]]), float64(par)))
		}
		return nil
	},
	"binary_f32": func(h *Host, _ kc.Config, a Args) error {
		op, par, dst, x, y, l := a.Int32(0), a.Float32(1), h.F32(a.Ptr(2)), h.F32(a.Ptr(3)), h.F32(a.Ptr(4)), a.Layout(5)
		for i := range l.N {
			o := offsets(l, i, 3)
			u, v := float64(x[o[1]]), float64(y[o[2]])
			if op == OpAXPY {
				dst[o[0]] = float32(u + float64(par)*v)
			} else {
				dst[o[0]] = float32(reference.Binary(tensor.BinaryOp(op), u, v))
			}
		}
		return nil
	},
	"reduce_rows_f32": func(h *Host, _ kc.Config, a Args) error {
		op, dst, src, rows, n := a.Int32(0), h.F32(a.Ptr(1)), h.F32(a.Ptr(2)), a.Int64(3), a.Int64(4)
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
		return nil
	},
	"argmax_rows_f32": func(h *Host, _ kc.Config, a Args) error {
		dst, src, rows, n := h.I32(a.Ptr(0)), h.F32(a.Ptr(1)), a.Int64(2), a.Int64(3)
		for r := range rows {
			best, bi := math.Inf(-1), -1
			for j := range n {
				if v := float64(src[r*n+j]); bi < 0 || v > best {
					best, bi = v, int(j)
				}
			}
			dst[r] = int32(bi)
		}
		return nil
	},
	"sgemm_f32": func(h *Host, _ kc.Config, a Args) error {
		ta, tb, M, N, K, alpha := a.Int32(0) != 0, a.Int32(1) != 0, int64(a.Int32(2)), int64(a.Int32(3)), int64(a.Int32(4)), float64(a.Float32(5))
		A, lda, sa, B, ldb, sb := h.F32(a.Ptr(6)), a.Int64(7), a.Int64(8), h.F32(a.Ptr(9)), a.Int64(10), a.Int64(11)
		beta, C, ldc, sc, batch := float64(a.Float32(12)), h.F32(a.Ptr(13)), a.Int64(14), a.Int64(15), int64(a.Int32(16))
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
		return nil
	},
	"im2col_f32": func(h *Host, _ kc.Config, a Args) error { return im2col(h, "im2col_f32", a) },
	"col2im_f32": func(h *Host, _ kc.Config, a Args) error { return im2col(h, "col2im_f32", a) },
}

// im2col runs im2col_f32 or col2im_f32 with the reference backend.
func im2col(h *Host, kernel string, a Args) error {
	g := tensor.ConvGeom{C: int(a.Int32(2)), H: int(a.Int32(3)), W: int(a.Int32(4)), KH: int(a.Int32(5)), KW: int(a.Int32(6)),
		StrideH: int(a.Int32(7)), StrideW: int(a.Int32(8)), PadH: int(a.Int32(9)), PadW: int(a.Int32(10))}
	if g.OutH() != int(a.Int32(11)) || g.OutW() != int(a.Int32(12)) {
		return fmt.Errorf("cudatest: %s: output %dx%d for geometry %+v", kernel, a.Int32(11), a.Int32(12), g)
	}
	dst, src := h.F32(a.Ptr(0)), h.F32(a.Ptr(1))
	if kernel == "im2col_f32" {
		reference.Backend{}.Im2Col(tensor.Buffer{Host: dst}, 0, tensor.Buffer{Host: src}, 0, g)
	} else {
		reference.Backend{}.Col2Im(tensor.Buffer{Host: dst}, 0, tensor.Buffer{Host: src}, 0, g)
	}
	return nil
}
