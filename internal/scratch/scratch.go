// Package scratch is the contract between the kernel packages and the
// per-goroutine buffer pools of their callers: a kernel that needs
// short-lived float32 buffers takes a Pool, and a nil Pool allocates.
package scratch

// Pool hands out short-lived buffers with arbitrary contents: Get returns n
// floats, Put takes them back once the caller is done with them.
type Pool interface {
	Get(n int) []float32
	Put(b []float32)
}

// Get returns n floats from p, new zeroed ones when p is nil.
func Get(p Pool, n int) []float32 {
	if p == nil {
		return make([]float32, n)
	}
	return p.Get(n)
}

// Put gives b back to p (nothing when p is nil).
func Put(p Pool, b []float32) {
	if p != nil {
		p.Put(b)
	}
}
