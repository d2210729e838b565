package cuda

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
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
//
// Launches, CopyToDevice and Zero may return before the device has done
// the work: a GPU runs them in order (on *Device, one stream), and the
// calls that wait for it (CopyFromDevice, Synchronize, Free) report a
// failure of the work queued before them (a kernel's illegal address, ...).
type GPU interface {
	kc.Launcher
	// Alloc returns bytes (> 0) of uninitialised device memory.
	Alloc(bytes int) (driver.DevicePtr, error)
	// Free frees memory returned by Alloc, once the work queued before
	// it is done.
	Free(p driver.DevicePtr)
	// Zero sets bytes bytes at p to 0 (queued like a launch).
	Zero(p driver.DevicePtr, bytes int) error
	// CopyToDevice copies src to device memory at dst (queued like a
	// launch; src may be reused when it returns).
	CopyToDevice(dst driver.DevicePtr, src []byte) error
	// CopyFromDevice copies device memory at src into dst once the work
	// queued before it is done, and waits for the copy.
	CopyFromDevice(dst []byte, src driver.DevicePtr) error
	// Synchronize waits for the work queued so far.
	Synchronize() error
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
func (d *Device) Alloc(bytes int) (driver.DevicePtr, error) {
	if p := d.profiling(); p != nil {
		p.count(func(c *profCounters) { c.deviceAllocs++ })
	}
	return d.ctx.MemAlloc(bytes)
}

// Free frees memory returned by Alloc (cuMemFree) once the work queued on
// the device's stream is done (a kernel may still use p).
func (d *Device) Free(p driver.DevicePtr) {
	if pr := d.profiling(); pr != nil {
		pr.count(func(c *profCounters) { c.syncs++; c.deviceFrees++ })
	}
	d.stream.Synchronize() // an earlier failure is reported by the next synchronising call too (sticky)
	d.ctx.MemFree(p)
}

// Zero queues setting bytes bytes at p to 0 (cuMemsetD8Async).
func (d *Device) Zero(p driver.DevicePtr, bytes int) error {
	if pr := d.profiling(); pr != nil {
		return pr.around(keyMemset, bytes, func() error { return d.stream.Memset8Async(p, 0, bytes) })
	}
	return d.stream.Memset8Async(p, 0, bytes)
}

// CopyToDevice queues a copy of src to device memory at dst; src may be
// reused when it returns. Copies of more than inlineMax bytes (batches, a
// DUEL update's rows) go through the device's pinned staging buffers (see
// stage): src is copied into page-locked memory and the DMA from there is
// queued without waiting for the stream; smaller ones are queued with
// cuMemcpyHtoDAsync from src, which the driver stages itself.
func (d *Device) CopyToDevice(dst driver.DevicePtr, src []byte) error {
	if p := d.profiling(); p != nil {
		return p.around(keyHtoD, len(src), func() error { return d.copyToDevice(dst, src) })
	}
	return d.copyToDevice(dst, src)
}

// copyToDevice is CopyToDevice without profiling.
func (d *Device) copyToDevice(dst driver.DevicePtr, src []byte) error {
	if len(src) > inlineMax {
		return d.stage(dst, src)
	}
	return driver.CopyHtoDAsync(d.stream, dst, src)
}

// Pinned staging of copies to the device: two page-locked buffers of
// stageBytes, used in turn for the chunks of a copy; each chunk's DMA is
// followed on the stream by an event, which a later chunk waits for
// before it overwrites the buffer. The host thus fills one buffer while
// the device reads the other, and a copy returns once its last chunk is
// queued.
//
// The driver may wait for the stream before it stages a pageable source
// itself (CUDA's "API synchronization behavior" notes), which would make
// the host wait for the device's queued work (a 128 KiB DUEL batch for
// the previous update's duel_move). Copies of at most inlineMax bytes
// stay on the driver's path: a staged chunk takes a whole buffer and
// records an event, and the copy after next waits for its DMA, a stall
// that labels and scalars do not need.
const (
	inlineMax  = 64 << 10
	stageBytes = 4 << 20
)

// staging is a Device's pinned staging buffers, allocated on first use.
type staging struct {
	mu   sync.Mutex
	bufs [2][]byte
	done [2]*driver.Event // recorded after the last copy from bufs[i]; nil before the first
	next int
	err  error // why pinned memory is unavailable: copies then go without staging

	waits int64 // synchronisations on a buffer's event before refilling it (for profiles)
}

// stage copies src to dst through the pinned staging buffers (or directly,
// when they cannot be allocated).
func (d *Device) stage(dst driver.DevicePtr, src []byte) error {
	s := &d.staging
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bufs[0] == nil && s.err == nil {
		for i := range s.bufs {
			if s.bufs[i], s.err = d.ctx.HostAlloc(stageBytes); s.err != nil {
				break
			}
		}
	}
	if s.err != nil {
		return driver.CopyHtoDAsync(d.stream, dst, src)
	}
	for len(src) > 0 {
		i := s.next
		s.next = 1 - i
		if s.done[i] != nil {
			s.waits++
			if err := s.done[i].Synchronize(); err != nil { // the device still reads bufs[i]
				return err
			}
		} else {
			ev, err := d.ctx.NewEvent()
			if err != nil {
				return err
			}
			s.done[i] = ev
		}
		n := copy(s.bufs[i], src)
		if err := driver.CopyHtoDAsync(d.stream, dst, s.bufs[i][:n]); err != nil {
			return err
		}
		if err := s.done[i].Record(d.stream); err != nil {
			return err
		}
		dst, src = dst.Add(n), src[n:]
	}
	return nil
}

// CopyFromDevice copies device memory at src into dst after the work
// queued before it (cuMemcpyDtoHAsync, then cuStreamSynchronize); its
// error may be that of an earlier launch.
func (d *Device) CopyFromDevice(dst []byte, src driver.DevicePtr) error {
	if p := d.profiling(); p != nil {
		if err := p.around(keyDtoH, len(dst), func() error { return driver.CopyDtoHAsync(d.stream, dst, src) }); err != nil {
			return err
		}
		p.count(func(c *profCounters) { c.syncs++ })
		return d.stream.Synchronize()
	}
	if err := driver.CopyDtoHAsync(d.stream, dst, src); err != nil {
		return err
	}
	return d.stream.Synchronize()
}

// Synchronize waits for the work queued on the device's stream
// (cuStreamSynchronize).
func (d *Device) Synchronize() error {
	if p := d.profiling(); p != nil {
		p.count(func(c *profCounters) { c.syncs++ })
	}
	return d.stream.Synchronize()
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
// float32 elements at ptr (ptr is 0 when n is 0), a block of the
// backend's caching allocator. The block goes back to the allocator's
// cache when the backend's Release is called on the handle or, failing
// that, when the handle becomes unreachable (a cleanup: the safety net).
type devBuf struct {
	ptr      driver.DevicePtr
	n        int
	released atomic.Bool
	cleanup  runtime.Cleanup
}

// at returns the address of element off.
func (b *devBuf) at(off int) driver.DevicePtr { return b.ptr.Add(4 * off) }

// newDevBuf returns device storage for n float32 values from mem,
// returned to mem's cache when the handle is released or unreachable; it
// is zeroed on g when zero is set.
func newDevBuf(mem *Allocator, g GPU, n int, zero bool) (*devBuf, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: allocating %d elements", n)
	}
	b := &devBuf{n: n}
	if n == 0 {
		return b, nil
	}
	p, err := mem.Alloc(4 * n)
	if err != nil {
		return nil, err
	}
	if zero {
		if err := g.Zero(p, 4*n); err != nil {
			mem.Free(p)
			return nil, err
		}
	}
	b.ptr = p
	b.cleanup = runtime.AddCleanup(b, mem.Free, p)
	return b, nil
}

// release returns b's block to mem now; later calls do nothing.
func (b *devBuf) release(mem *Allocator) {
	if b == nil || b.released.Swap(true) || b.n == 0 {
		return
	}
	b.cleanup.Stop()
	mem.Free(b.ptr)
}

// scratch is device memory for the duration of one call; release returns
// it to the cache.
type scratch struct {
	mem  *Allocator
	ptrs []driver.DevicePtr
}

// alloc returns n bytes (at least 1) of scratch memory.
func (s *scratch) alloc(n int) (driver.DevicePtr, error) {
	p, err := s.mem.Alloc(max(n, 1))
	if err != nil {
		return 0, err
	}
	s.ptrs = append(s.ptrs, p)
	return p, nil
}

// release returns every allocation to the cache.
func (s *scratch) release() {
	for _, p := range s.ptrs {
		s.mem.Free(p)
	}
	s.ptrs = nil
}
