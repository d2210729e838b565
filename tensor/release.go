package tensor

// Releaser is implemented by backends that can take storage back before
// the garbage collector finds its handle unreachable (device backends with
// a caching allocator: the CUDA backend). Release returns b's storage to
// the backend; b, and every Buffer sharing its handle, must not be used
// afterwards. Releasing storage twice is harmless.
type Releaser interface {
	Release(b Buffer)
}

// Release gives t's storage back to its backend now, when the backend is
// a Releaser, instead of when the garbage collector finds it unreachable:
// device memory is then reusable at once (freed deterministically). The
// storage is shared by every view of t (Reshape, Slice, Transpose, ...):
// neither t nor any of them may be used afterwards; the backend panics if
// one is. On the CPU, and on backends that are not Releasers, Release does
// nothing. Releasing a tensor twice is harmless.
func (t *Tensor) Release() {
	if t == nil || t.handle == nil || t.device == CPU || t.device == "" {
		return
	}
	if r, ok := backendOf("Release", t).(Releaser); ok {
		r.Release(Buffer{Dev: t.handle})
	}
}
