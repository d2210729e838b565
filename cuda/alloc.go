package cuda

import (
	"fmt"
	"math/bits"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/duel-ssl/duel/cuda/driver"
)

// Allocator is a caching allocator of device memory on a GPU, as the CUDA
// backend uses it for tensors: a request is rounded up to its size class
// and served from the blocks of that class returned earlier when there
// are any, else by GPU.Alloc. Free returns a block to the cache, not to
// the device, so that steady-state training allocates nothing from the
// driver. Blocks are reused only after the work queued before their Free
// (the GPU runs launches and copies in order on one stream, so a later
// user of a block runs after its earlier users).
//
// When the device is out of memory, Alloc empties the cache (the blocks
// of every class go back to the device) and tries again, then collects
// garbage (unreachable tensors' blocks) and tries once more; if that fails
// too, the error is an *OutOfMemoryError naming the request and the memory
// held. EmptyCache returns the cached blocks to the device on
// demand. Its methods are safe for concurrent use.
type Allocator struct {
	g     GPU
	mu    sync.Mutex
	free  map[int][]driver.DevicePtr // cached blocks by size class
	live  map[driver.DevicePtr]int   // blocks handed out, with their class
	stats AllocatorStats
}

// AllocatorStats are an Allocator's counters. Byte counts are of size
// classes (what the blocks occupy), not of requests.
type AllocatorStats struct {
	InUse        int64 // bytes handed out and not returned
	Cached       int64 // bytes in the cache, free for reuse
	PeakInUse    int64 // the largest InUse so far
	Requests     int64 // Alloc calls served
	Hits         int64 // requests served from the cache
	DeviceAllocs int64 // blocks allocated from the device
	DeviceFrees  int64 // blocks returned to the device (EmptyCache)
	Collections  int64 // garbage collections run to find unreachable buffers when the device was out of memory
}

// NewAllocator returns an empty caching allocator on g.
func NewAllocator(g GPU) *Allocator {
	return &Allocator{g: g, free: map[int][]driver.DevicePtr{}, live: map[driver.DevicePtr]int{}}
}

// SizeClass returns the bytes a request of n bytes occupies: n rounded up
// to a multiple of 512 up to 1 MiB, and above it to a multiple of an
// eighth of the power of two below n (at most 12.5% more than asked).
func SizeClass(n int) int {
	if n <= 0 {
		return 512
	}
	step := 512
	if n > 1<<20 {
		step = 1 << (bits.Len(uint(n-1)) - 4)
	}
	return (n + step - 1) / step * step
}

// OutOfMemoryError is the error of an allocation the device could not
// serve even with the cache emptied.
type OutOfMemoryError struct {
	Requested int   // bytes asked for
	Class     int   // bytes of the size class tried
	InUse     int64 // bytes held by live blocks
	Cached    int64 // bytes that were cached (returned to the device before the retries)
	Err       error // the device's error (CUDA_ERROR_OUT_OF_MEMORY)
}

func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("cuda: out of device memory allocating %d bytes (size class %d): %d bytes in use by live buffers (after a garbage collection), %d were cached and returned to the device before retrying: %v",
		e.Requested, e.Class, e.InUse, e.Cached, e.Err)
}

// Unwrap returns the device's error.
func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// Alloc returns a block of at least n bytes (n > 0), uninitialised.
//
// When the device is out of memory (CUDA_ERROR_OUT_OF_MEMORY) it returns
// the cache to the device and tries again; then it runs a garbage
// collection (device memory is invisible to Go's collector, so tensors
// nobody released may be unreachable but not yet collected: their cleanups
// return their blocks to the cache), returns the cache again and makes a
// last try. Other errors are returned at once.
func (a *Allocator) Alloc(n int) (driver.DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: allocating %d bytes, expected a positive size", n)
	}
	c := SizeClass(n)
	a.mu.Lock()
	a.stats.Requests++
	p, ok := a.fromCacheLocked(c)
	a.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := a.g.Alloc(c)
	var returned int64 // bytes returned to the device by the retries
	for attempt := 0; err != nil && driver.IsCode(err, driver.ErrOutOfMemory) && attempt < 2; attempt++ {
		if attempt == 1 {
			a.collect()
		}
		a.mu.Lock()
		if p, ok = a.fromCacheLocked(c); ok { // a collected block of the class
			a.mu.Unlock()
			return p, nil
		}
		cached := a.stats.Cached
		serr := a.emptyLocked()
		a.mu.Unlock()
		if serr != nil {
			return 0, fmt.Errorf("cuda: emptying the cache for %d bytes: %w", n, serr)
		}
		returned += cached
		p, err = a.g.Alloc(c)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		if driver.IsCode(err, driver.ErrOutOfMemory) {
			return 0, &OutOfMemoryError{Requested: n, Class: c, InUse: a.stats.InUse, Cached: returned, Err: err}
		}
		return 0, fmt.Errorf("cuda: allocating %d bytes (size class %d): %w", n, c, err)
	}
	a.stats.DeviceAllocs++
	a.handOut(p, c)
	return p, nil
}

// fromCacheLocked hands out a cached block of class c, if any.
func (a *Allocator) fromCacheLocked(c int) (driver.DevicePtr, bool) {
	l := a.free[c]
	if len(l) == 0 {
		return 0, false
	}
	p := l[len(l)-1]
	a.free[c] = l[:len(l)-1]
	a.stats.Hits++
	a.stats.Cached -= int64(c)
	a.handOut(p, c)
	return p, true
}

// collect runs a garbage collection and waits (up to 50 ms) for the
// cleanups of the unreachable buffers to return their blocks to the cache:
// until the cache has not grown for 2 ms.
func (a *Allocator) collect() {
	a.mu.Lock()
	a.stats.Collections++
	a.mu.Unlock()
	runtime.GC()
	last, still := int64(-1), 0
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline) && still < 2; {
		time.Sleep(time.Millisecond)
		a.mu.Lock()
		cached := a.stats.Cached
		a.mu.Unlock()
		if cached == last {
			still++
		} else {
			last, still = cached, 0
		}
	}
}

// handOut records p (of class c) as live.
func (a *Allocator) handOut(p driver.DevicePtr, c int) {
	a.live[p] = c
	a.stats.InUse += int64(c)
	a.stats.PeakInUse = max(a.stats.PeakInUse, a.stats.InUse)
}

// Free returns a block from Alloc to the cache. It panics when p is not a
// live block (a double free).
func (a *Allocator) Free(p driver.DevicePtr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.live[p]
	if !ok {
		panic(fmt.Sprintf("cuda: Allocator.Free of %#x, not a live block", p))
	}
	delete(a.live, p)
	a.stats.InUse -= int64(c)
	a.stats.Cached += int64(c)
	a.free[c] = append(a.free[c], p)
}

// EmptyCache returns every cached block to the device, after the work
// queued on the GPU is done (it may still use them).
func (a *Allocator) EmptyCache() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.emptyLocked()
}

func (a *Allocator) emptyLocked() error {
	if a.stats.Cached == 0 {
		return nil
	}
	if err := a.g.Synchronize(); err != nil {
		return err
	}
	classes := make([]int, 0, len(a.free))
	for c := range a.free {
		classes = append(classes, c)
	}
	sort.Ints(classes)
	for _, c := range classes {
		for _, p := range a.free[c] {
			a.g.Free(p)
			a.stats.DeviceFrees++
			a.stats.Cached -= int64(c)
		}
		delete(a.free, c)
	}
	return nil
}

// Stats returns the allocator's counters.
func (a *Allocator) Stats() AllocatorStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}
