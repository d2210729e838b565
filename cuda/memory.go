package cuda

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// gpu is what the backend and DUELUpdate need from a device: an allocator,
// copies and kernel launches. *Device implements it with the driver; the
// tests also implement it on host memory (with Go versions of the kernels)
// to check the Go side of the backend without a GPU.
type gpu interface {
	kc.Launcher
	alloc(bytes int) (driver.DevicePtr, error)
	free(p driver.DevicePtr)
	zero(p driver.DevicePtr, bytes int) error
	htod(dst driver.DevicePtr, src []byte) error
	dtoh(dst []byte, src driver.DevicePtr) error
	multiprocessors() int
}

func (d *Device) alloc(n int) (driver.DevicePtr, error) { return d.ctx.MemAlloc(n) }
func (d *Device) free(p driver.DevicePtr)               { d.ctx.MemFree(p) }
func (d *Device) zero(p driver.DevicePtr, n int) error  { return d.ctx.Memset8(p, 0, n) }
func (d *Device) htod(dst driver.DevicePtr, src []byte) error {
	return driver.CopyHtoD(d.ctx, dst, src)
}
func (d *Device) dtoh(dst []byte, src driver.DevicePtr) error {
	return driver.CopyDtoH(d.ctx, dst, src)
}
func (d *Device) multiprocessors() int { return d.sms }

// bytesOf returns the memory of s as bytes (shared, not copied).
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// devBuf is the device storage behind a tensor.Buffer's Dev handle: n
// float32 elements at ptr (ptr is 0 when n is 0). The memory is freed when
// the handle becomes unreachable.
type devBuf struct {
	ptr driver.DevicePtr
	n   int
}

// at returns the address of element off.
func (b *devBuf) at(off int) driver.DevicePtr { return b.ptr.Add(4 * off) }

// allocFloats returns zeroed device storage for n float32 values on g,
// freed by a cleanup when the returned handle is unreachable.
func allocFloats(g gpu, n int) (*devBuf, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: allocating %d elements", n)
	}
	b := &devBuf{n: n}
	if n == 0 {
		return b, nil
	}
	p, err := g.alloc(4 * n)
	if err != nil {
		return nil, err
	}
	if err := g.zero(p, 4*n); err != nil {
		g.free(p)
		return nil, err
	}
	b.ptr = p
	runtime.AddCleanup(b, func(p driver.DevicePtr) { g.free(p) }, p)
	return b, nil
}

// scratch is device memory for the duration of one call; release frees it.
type scratch struct {
	g    gpu
	ptrs []driver.DevicePtr
}

// alloc returns n bytes (at least 1) of scratch memory.
func (s *scratch) alloc(n int) (driver.DevicePtr, error) {
	p, err := s.g.alloc(max(n, 1))
	if err != nil {
		return 0, err
	}
	s.ptrs = append(s.ptrs, p)
	return p, nil
}

// release frees every allocation.
func (s *scratch) release() {
	for _, p := range s.ptrs {
		s.g.free(p)
	}
	s.ptrs = nil
}
