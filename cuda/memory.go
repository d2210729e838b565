package cuda

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// GPU is what code that runs kernels/cuda kernels needs from a device: an
// allocator, copies between host and device, and kernel launches. *Device
// implements it with the driver; the tests implement it on host memory
// (internal/cudatest: Go versions of the kernels, or the real kernel
// sources on a CPU emulator), so that everything above the driver runs
// without a GPU. The CUDA backend and package duel/memory/cudaduel are
// written against it.
type GPU interface {
	kc.Launcher
	// Alloc returns bytes (> 0) of uninitialised device memory.
	Alloc(bytes int) (driver.DevicePtr, error)
	// Free frees memory returned by Alloc.
	Free(p driver.DevicePtr)
	// Zero sets bytes bytes at p to 0.
	Zero(p driver.DevicePtr, bytes int) error
	// CopyToDevice copies src to device memory at dst.
	CopyToDevice(dst driver.DevicePtr, src []byte) error
	// CopyFromDevice copies device memory at src into dst; it waits for
	// the work queued before it, so dst holds its results.
	CopyFromDevice(dst []byte, src driver.DevicePtr) error
	// Multiprocessors returns the number of streaming multiprocessors
	// (grid-stride launches size their grids by it).
	Multiprocessors() int
}

// SharedMemoryOptIn is implemented by GPUs whose kernels may use more than
// the default 48 KiB of dynamic shared memory per block once they opt in
// (*Device).
type SharedMemoryOptIn interface {
	// MaxSharedOptIn returns the most shared memory a block may use after
	// opting in (static and dynamic together).
	MaxSharedOptIn() (int, error)
	// OptInShared lets launches of kernel of module m use up to bytes of
	// dynamic shared memory.
	OptInShared(m *kc.Module, kernel string, bytes int) error
}

// Alloc returns bytes of device memory (cuMemAlloc).
func (d *Device) Alloc(bytes int) (driver.DevicePtr, error) { return d.ctx.MemAlloc(bytes) }

// Free frees memory returned by Alloc (cuMemFree).
func (d *Device) Free(p driver.DevicePtr) { d.ctx.MemFree(p) }

// Zero sets bytes bytes at p to 0 (cuMemsetD8).
func (d *Device) Zero(p driver.DevicePtr, bytes int) error { return d.ctx.Memset8(p, 0, bytes) }

// CopyToDevice copies src to device memory at dst (cuMemcpyHtoD).
func (d *Device) CopyToDevice(dst driver.DevicePtr, src []byte) error {
	return driver.CopyHtoD(d.ctx, dst, src)
}

// CopyFromDevice copies device memory at src into dst (cuMemcpyDtoH).
func (d *Device) CopyFromDevice(dst []byte, src driver.DevicePtr) error {
	return driver.CopyDtoH(d.ctx, dst, src)
}

// Multiprocessors returns the device's number of streaming multiprocessors.
func (d *Device) Multiprocessors() int { return d.sms }

// MaxSharedOptIn returns the most shared memory per block a kernel may use
// after opting in (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).
func (d *Device) MaxSharedOptIn() (int, error) {
	return d.dev.Attribute(driver.AttrMaxSharedMemoryPerBlockOptin)
}

// OptInShared lets launches of kernel of module m use up to bytes of
// dynamic shared memory (cuFuncSetAttribute), loading m if needed.
func (d *Device) OptInShared(m *kc.Module, kernel string, bytes int) error {
	f, err := d.function(m, kernel)
	if err != nil {
		return err
	}
	return f.SetMaxDynamicShared(bytes)
}

// Bytes returns the memory of s as bytes (shared, not copied), for
// GPU.CopyToDevice and GPU.CopyFromDevice.
func Bytes[T any](s []T) []byte {
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
func allocFloats(g GPU, n int) (*devBuf, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: allocating %d elements", n)
	}
	b := &devBuf{n: n}
	if n == 0 {
		return b, nil
	}
	p, err := g.Alloc(4 * n)
	if err != nil {
		return nil, err
	}
	if err := g.Zero(p, 4*n); err != nil {
		g.Free(p)
		return nil, err
	}
	b.ptr = p
	runtime.AddCleanup(b, func(p driver.DevicePtr) { g.Free(p) }, p)
	return b, nil
}

// scratch is device memory for the duration of one call; release frees it.
type scratch struct {
	g    GPU
	ptrs []driver.DevicePtr
}

// alloc returns n bytes (at least 1) of scratch memory.
func (s *scratch) alloc(n int) (driver.DevicePtr, error) {
	p, err := s.g.Alloc(max(n, 1))
	if err != nil {
		return 0, err
	}
	s.ptrs = append(s.ptrs, p)
	return p, nil
}

// release frees every allocation.
func (s *scratch) release() {
	for _, p := range s.ptrs {
		s.g.Free(p)
	}
	s.ptrs = nil
}
