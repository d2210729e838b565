package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor"
)

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{-1, 512}, {0, 512}, {1, 512}, {512, 512}, {513, 1024}, {4000, 4096},
		{1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<17}, {3 << 20, 3 << 20}, {3<<20 + 1, 3<<20 + 1<<18},
		{1<<30 - 1, 1 << 30}, {1<<30 + 1, 1<<30 + 1<<27},
	} {
		got := SizeClass(tc.n)
		if got != tc.want {
			t.Errorf("SizeClass(%d) = %d, want %d", tc.n, got, tc.want)
		}
		if tc.n > 0 && (got < tc.n || float64(got) > 1.125*float64(max(tc.n, 4096))) {
			t.Errorf("SizeClass(%d) = %d: outside [n, 1.125 n]", tc.n, got)
		}
	}
}

// budgetGPU is a cudatest.Host with capacity bytes of device memory:
// beyond them Alloc fails with CUDA_ERROR_OUT_OF_MEMORY, as a device does.
type budgetGPU struct {
	*cudatest.Host
	mu       sync.Mutex
	capacity int
	used     int
	sizes    map[driver.DevicePtr]int
	syncs    int
}

func newBudgetGPU(capacity int) *budgetGPU {
	return &budgetGPU{Host: cudatest.NewHost(), capacity: capacity, sizes: map[driver.DevicePtr]int{}}
}

var errOOM = &driver.Error{Op: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Text: "out of memory"}

func (b *budgetGPU) Alloc(n int) (driver.DevicePtr, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.capacity {
		return 0, errOOM
	}
	p, err := b.Host.Alloc(n)
	if err == nil {
		b.used += n
		b.sizes[p] = n
	}
	return p, err
}

func (b *budgetGPU) Free(p driver.DevicePtr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Host.Free(p)
	b.used -= b.sizes[p]
	delete(b.sizes, p)
}

func (b *budgetGPU) Synchronize() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.syncs++
	return nil
}

// TestAllocatorReuse checks that freed blocks are reused by requests of
// their size class, and only by them, without device allocations.
func TestAllocatorReuse(t *testing.T) {
	g := newBudgetGPU(1 << 30)
	a := NewAllocator(g)
	p1, err := a.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	a.Free(p1)
	for _, tc := range []struct {
		n     int
		reuse bool
	}{{1024, true}, {600, true}, {2000, false}} { // 600 bytes is class 1024 too
		p, err := a.Alloc(tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if (p == p1) != tc.reuse {
			t.Errorf("Alloc(%d) after freeing a 1000-byte block: reused %v, want %v", tc.n, p == p1, tc.reuse)
		}
		a.Free(p)
	}
	s := a.Stats()
	want := AllocatorStats{InUse: 0, Cached: 1024 + 2048, PeakInUse: 2048, Requests: 4, Hits: 2, DeviceAllocs: 2}
	if s != want {
		t.Errorf("Stats() = %+v, want %+v", s, want)
	}
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.Cached != 0 || s.DeviceFrees != 2 || g.Live() != 0 || g.syncs != 1 {
		t.Errorf("after EmptyCache: %+v, %d device allocations live, %d synchronisations; want nothing cached or live, 2 device frees after 1 synchronisation", s, g.Live(), g.syncs)
	}
}

// TestAllocatorFragmentation checks that a request the device cannot serve
// while the cache holds blocks of other classes empties the cache and
// succeeds.
func TestAllocatorFragmentation(t *testing.T) {
	g := newBudgetGPU(8 << 20)
	a := NewAllocator(g)
	var ps []driver.DevicePtr
	for range 7 {
		p, err := a.Alloc(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for _, p := range ps[:6] {
		a.Free(p)
	}
	p, err := a.Alloc(4 << 20) // 1 MiB in use, 6 cached, 1 free on the device
	if err != nil {
		t.Fatalf("Alloc(4 MiB) with 6 MiB cached in 1 MiB blocks: %v", err)
	}
	if s := a.Stats(); s.Cached != 0 || s.InUse != 5<<20 || s.DeviceFrees != 6 {
		t.Errorf("Stats() = %+v, want the cache emptied (6 device frees) and 5 MiB in use", s)
	}
	a.Free(p)
	a.Free(ps[6])
}

// TestAllocatorOutOfMemory checks the error of a request the device cannot
// serve even with the cache emptied: an *OutOfMemoryError naming the
// request and the memory held, wrapping the driver's error.
func TestAllocatorOutOfMemory(t *testing.T) {
	g := newBudgetGPU(4 << 20)
	a := NewAllocator(g)
	held, err := a.Alloc(2 << 20)
	if err != nil {
		t.Fatal(err)
	}
	cached, err := a.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	a.Free(cached)
	_, err = a.Alloc(3<<20 + 5)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || !driver.IsCode(err, 2) {
		t.Fatalf("Alloc beyond the device: %v, want an *OutOfMemoryError wrapping CUDA_ERROR_OUT_OF_MEMORY", err)
	}
	want := OutOfMemoryError{Requested: 3<<20 + 5, Class: 3<<20 + 1<<18, InUse: 2 << 20, Cached: 1 << 20, Err: errOOM}
	if *oom != want {
		t.Errorf("error %+v, want %+v", *oom, want)
	}
	for _, s := range []string{"3145733 bytes", "size class 3407872", "2097152 bytes in use", "1048576 were cached"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	a.Free(held)
	if p, err := a.Alloc(3<<20 + 5); err != nil {
		t.Errorf("Alloc after freeing: %v", err)
	} else {
		a.Free(p)
	}
	defer func() {
		if recover() == nil {
			t.Error("a double Free did not panic")
		}
	}()
	a.Free(held)
}

// hostDevice serves tensors on "cudahost:0" with the CUDA backend on
// cudatest.Host (registered once per test process).
type hostDevice struct{ *Backend }

// Name returns "cudahost".
func (hostDevice) Name() string { return "cudahost" }

var hostRegistered = sync.OnceValue(func() *Backend {
	b, err := newBackend(cudatest.NewHost(), 64)
	if err != nil {
		panic(err)
	}
	tensor.Register(hostDevice{b})
	return b
})

// TestTensorRelease checks deterministic freeing: (*tensor.Tensor).Release
// returns a tensor's memory to the backend's cache at once, using the
// tensor (or a view) afterwards panics, and memory not released returns
// to the cache when the garbage collector finds its tensor unreachable.
func TestTensorRelease(t *testing.T) {
	be := hostRegistered()
	if _, ok := tensor.Backend(be).(tensor.Releaser); !ok {
		t.Fatal("the CUDA backend is not a tensor.Releaser")
	}
	const dev tensor.Device = "cudahost:0"
	x, err := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3).To(dev)
	if err != nil {
		t.Fatal(err)
	}
	before := be.MemoryStats()
	view := x.Reshape(3, 2)
	x.Release()
	after := be.MemoryStats()
	if after.InUse != before.InUse-512 || after.Cached != before.Cached+512 {
		t.Errorf("Release: in use %d -> %d, cached %d -> %d; want 512 bytes moved to the cache", before.InUse, after.InUse, before.Cached, after.Cached)
	}
	x.Release() // harmless
	if s := be.MemoryStats(); s != after {
		t.Errorf("a second Release changed the stats: %+v -> %+v", after, s)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "after Release") {
				t.Errorf("reading a view of a released tensor: panic %v, want one saying \"after Release\"", r)
			}
		}()
		view.To(tensor.CPU)
	}()
	y, err := tensor.FromSlice([]float32{1, 2}, 2).To(dev) // reuses x's block
	if err != nil {
		t.Fatal(err)
	}
	if s := be.MemoryStats(); s.Hits != after.Hits+1 || s.DeviceAllocs != after.DeviceAllocs {
		t.Errorf("allocating after Release: %+v, want a cache hit and no device allocation", s)
	}
	inUse := be.MemoryStats().InUse
	runtime.KeepAlive(y)
	y = nil
	deadline := time.Now().Add(5 * time.Second)
	for be.MemoryStats().InUse >= inUse {
		if time.Now().After(deadline) {
			t.Fatalf("an unreachable tensor's memory did not return to the cache (in use %d)", be.MemoryStats().InUse)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// TestAllocatorCollects checks that an allocation the device cannot serve
// while unreachable tensors' buffers wait for the garbage collector
// succeeds: the allocator collects garbage, their cleanups return the
// blocks to the cache, and the cache goes back to the device.
func TestAllocatorCollects(t *testing.T) {
	// No collection but the allocator's own: one started by the runtime
	// would return the dropped buffers before the test counts them.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	g := newBudgetGPU(4<<20 + 256) // the backend's 256-byte dummy, then 4 MiB
	be, err := newBackend(g, 64)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		be.Alloc(1 << 18) // 1 MiB each, dropped without Release
	}
	if s := be.MemoryStats(); s.InUse != 3<<20 {
		t.Fatalf("after 3 MiB of allocations: %+v", s)
	}
	buf := be.Alloc(1 << 19) // 2 MiB: fits only once the dropped buffers are collected
	s := be.MemoryStats()
	if s.Collections != 1 || s.InUse != 2<<20 || s.DeviceFrees != 3 {
		t.Errorf("after an allocation that needed a collection: %+v, want 1 collection, 2 MiB in use, 3 device frees", s)
	}
	be.Release(buf)
	// A request no collection can serve: the *OutOfMemoryError, at once
	// for errors other than out of memory.
	err = tensor.CatchDeviceError(func() { be.Alloc(2 << 20) })
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || oom.Requested != 8<<20 || oom.InUse != 0 || oom.Cached != 2<<20 {
		t.Errorf("Alloc of 8 MiB on a 4 MiB device: %v, want an *OutOfMemoryError of 8 MiB, nothing in use, 2 MiB returned from the cache", err)
	}
	if s := be.MemoryStats(); s.Collections != 2 {
		t.Errorf("Collections = %d, want 2", s.Collections)
	}
	other := &driver.Error{Op: "cuMemAlloc", Code: 201, Name: "CUDA_ERROR_INVALID_CONTEXT", Text: "invalid device context"}
	a := NewAllocator(failingGPU{cudatest.NewHost(), other})
	if _, err := a.Alloc(10); err == nil || errors.As(err, &oom) || !driver.IsCode(err, 201) || a.Stats().Collections != 0 {
		t.Errorf("Alloc with the driver failing otherwise: %v (collections %d), want the driver's error, no collection", err, a.Stats().Collections)
	}
}
