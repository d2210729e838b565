package driver

import (
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"
)

// Stream is a CUDA stream of a context: work queued on it runs in order,
// asynchronously to the host.
type Stream struct {
	h   uintptr
	ctx *Context
}

// NewStream creates a stream in c (cuStreamCreate, flags 0: a blocking
// stream, ordered with the legacy default stream). Destroy it with Close.
func (c *Context) NewStream() (*Stream, error) {
	var h uintptr
	err := c.Do(func() error {
		return check("cuStreamCreate", callRaw(lib.cuStreamCreate, uintptr(unsafe.Pointer(&h)), 0))
	})
	if err != nil {
		return nil, err
	}
	return &Stream{h: h, ctx: c}, nil
}

// Synchronize waits for the work queued on s (cuStreamSynchronize); the
// error of an asynchronous failure (a kernel's illegal address, ...) is
// reported here.
func (s *Stream) Synchronize() error {
	return s.ctx.Do(func() error { return check("cuStreamSynchronize", callRaw(lib.cuStreamSynchronize, s.h)) })
}

// Close destroys s (cuStreamDestroy) once its work is done.
func (s *Stream) Close() error {
	return s.ctx.Do(func() error { return check("cuStreamDestroy", callRaw(lib.cuStreamDestroy, s.h)) })
}

// CopyHtoDAsync queues a copy of the host slice src to device memory at dst
// on s (cuMemcpyHtoDAsync). From pageable memory the driver stages src
// before returning, so src may be reused at once; from pinned memory
// (HostAlloc) src must stay unchanged until s reaches the copy.
func CopyHtoDAsync[T any](s *Stream, dst DevicePtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	n := len(src) * int(unsafe.Sizeof(src[0]))
	return s.ctx.Do(func() error {
		return check("cuMemcpyHtoDAsync", callRaw(lib.cuMemcpyHtoDAsync, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(n), s.h))
	})
}

// CopyDtoHAsync queues a copy of device memory at src into the host slice
// dst on s (cuMemcpyDtoHAsync). dst holds the values only once s is
// synchronised; into pageable memory the copy completes before the call
// returns.
func CopyDtoHAsync[T any](s *Stream, dst []T, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	n := len(dst) * int(unsafe.Sizeof(dst[0]))
	return s.ctx.Do(func() error {
		return check("cuMemcpyDtoHAsync", callRaw(lib.cuMemcpyDtoHAsync, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(n), s.h))
	})
}

// Memset8Async queues setting n bytes at p to v on s (cuMemsetD8Async).
func (s *Stream) Memset8Async(p DevicePtr, v byte, n int) error {
	if n == 0 {
		return nil
	}
	return s.ctx.Do(func() error {
		return check("cuMemsetD8Async", callRaw(lib.cuMemsetD8Async, uintptr(p), uintptr(v), uintptr(n), s.h))
	})
}

// HostAlloc returns n bytes (n > 0) of page-locked host memory
// (cuMemHostAlloc, flags 0), which asynchronous copies move without
// staging. Free it with FreeHost; the garbage collector does not.
func (c *Context) HostAlloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: cuMemHostAlloc of %d bytes, expected a positive size", n)
	}
	var p unsafe.Pointer
	err := c.Do(func() error {
		return check("cuMemHostAlloc", callRaw(lib.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n), 0))
	})
	if err != nil {
		return nil, fmt.Errorf("%w (allocating %d bytes of pinned host memory)", err, n)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// FreeHost frees memory returned by HostAlloc.
func (c *Context) FreeHost(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return c.Do(func() error {
		return check("cuMemFreeHost", callRaw(lib.cuMemFreeHost, uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
	})
}

// LaunchAsync queues f on s with grid x block threads and shared bytes of
// dynamic shared memory, and returns without waiting: a launch error (a
// bad configuration, too many resources) is returned here, a failure while
// the kernel runs by the next synchronising call on s. args are those of
// Launch.
func (f *Function) LaunchAsync(s *Stream, grid, block Dim3, shared int, args ...any) error {
	for _, d := range []struct {
		what string
		v    Dim3
	}{{"grid", grid}, {"block", block}} {
		if d.v.X <= 0 || d.v.Y <= 0 || d.v.Z <= 0 || d.v.X > math.MaxInt32 || d.v.Y > 65535 || d.v.Z > 65535 {
			return fmt.Errorf("cuda: launch %s: bad %s size %v", f.name, d.what, d.v)
		}
	}
	keep, params, err := PackParams(args)
	if err != nil {
		return fmt.Errorf("cuda: launch %s: %w", f.name, err)
	}
	err = f.ctx.Do(func() error {
		return check("cuLaunchKernel", callRaw(lib.cuLaunchKernel, f.h,
			uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
			uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
			uintptr(shared), s.h, uintptr(unsafe.Pointer(&params[0])), 0))
	})
	runtime.KeepAlive(keep) // cuLaunchKernel copies the parameters before it returns
	if err != nil {
		return fmt.Errorf("kernel %s (grid %v, block %v): %w", f.name, grid, block, err)
	}
	return nil
}

// Event is a CUDA event: a point in a stream's work, for timing.
type Event struct {
	h   uintptr
	ctx *Context
}

// NewEvent creates an event in c (cuEventCreate, flags 0: with timing).
// Destroy it with Close.
func (c *Context) NewEvent() (*Event, error) {
	var h uintptr
	err := c.Do(func() error {
		return check("cuEventCreate", callRaw(lib.cuEventCreate, uintptr(unsafe.Pointer(&h)), 0))
	})
	if err != nil {
		return nil, err
	}
	return &Event{h: h, ctx: c}, nil
}

// Record queues e on s (cuEventRecord): e completes when s's work queued
// before it does.
func (e *Event) Record(s *Stream) error {
	return e.ctx.Do(func() error { return check("cuEventRecord", callRaw(lib.cuEventRecord, e.h, s.h)) })
}

// Synchronize waits for e to complete (cuEventSynchronize).
func (e *Event) Synchronize() error {
	return e.ctx.Do(func() error { return check("cuEventSynchronize", callRaw(lib.cuEventSynchronize, e.h)) })
}

// Since returns the device time between start and e, both recorded and
// complete (cuEventElapsedTime: about 0.5 us resolution).
func (e *Event) Since(start *Event) (time.Duration, error) {
	var ms float32
	err := e.ctx.Do(func() error {
		return check("cuEventElapsedTime", callRaw(lib.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start.h, e.h))
	})
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close destroys e (cuEventDestroy).
func (e *Event) Close() error {
	return e.ctx.Do(func() error { return check("cuEventDestroy", callRaw(lib.cuEventDestroy, e.h)) })
}
