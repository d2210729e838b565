package scratch

import "sync"

// Free is a Pool that keeps the buffers given back to it and hands out the
// smallest one large enough (best fit), so that a loop whose sizes repeat
// allocates nothing after its first round. It is safe for concurrent use;
// the zero Free is empty and ready.
type Free struct {
	mu     sync.Mutex
	free   [][]float32
	allocs int
}

// Get returns n floats with arbitrary contents.
func (f *Free) Get(n int) []float32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	best := -1
	for i, b := range f.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(f.free[best])) {
			best = i
		}
	}
	if best < 0 {
		f.allocs++
		return make([]float32, n)
	}
	b := f.free[best]
	last := len(f.free) - 1
	f.free[best] = f.free[last]
	f.free[last] = nil
	f.free = f.free[:last]
	return b[:n]
}

// Put takes back a buffer obtained from Get.
func (f *Free) Put(b []float32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.free = append(f.free, b)
}

// Allocs returns how many buffers Get has had to allocate so far.
func (f *Free) Allocs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.allocs
}
