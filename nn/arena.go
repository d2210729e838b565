package nn

import (
	"sync"

	"github.com/duel-ssl/duel/tensor"
)

// Arena recycles the buffers of a training loop: layer outputs and
// activation gradients, float32 slices on the CPU (the kernels' scratch is
// the CPU backend's own pool, internal/scratch) and device tensors on
// other devices (which would otherwise go back to the device's allocator
// only when the garbage collector finds them, each new one zeroed). A loop
// whose shapes repeat (the usual case) allocates nothing after its first
// step, and a step of smaller shapes (an evaluation's last batch) is
// served on the CPU from the buffers of the usual ones, each lent whole
// to a request of at least half its size.
//
// Buffers handed out during a step stay valid until Reset: call Reset at
// the start of each step, once the previous step's outputs are no longer
// used. The exception is the gradient of a layer's output, which the layer
// gives back at the end of its backward pass (the tape drops it then), so
// that backward needs little more memory than forward: do not keep
// intermediate activation gradients. Parameter gradients never come from
// the arena. Attach an arena to a network with UseArena; a nil *Arena is
// valid and allocates fresh zeroed memory, as layers without an arena do.
//
// An Arena is safe for concurrent use, but a network sharing one must not
// be stepped concurrently with Reset.
type Arena struct {
	mu       sync.Mutex
	free     map[int][][]float32    // whole buffers, by capacity
	inUse    map[*float32][]float32 // handed out since Reset, by first element
	devFree  map[devKey][]*tensor.Tensor
	devInUse map[devKey][]*tensor.Tensor // handed out since Reset
	allocs   int
}

// devKey groups an arena's device buffers: contiguous 1-d tensors of n
// elements on dev.
type devKey struct {
	dev tensor.Device
	n   int
}

// NewArena returns an empty arena.
func NewArena() *Arena {
	return &Arena{free: map[int][][]float32{}, inUse: map[*float32][]float32{},
		devFree: map[devKey][]*tensor.Tensor{}, devInUse: map[devKey][]*tensor.Tensor{}}
}

// ArenaUser is implemented by modules that allocate from an arena.
type ArenaUser interface {
	SetArena(a *Arena)
}

// UseArena makes every module of the tree allocate from a (nil: plain
// allocation).
func UseArena(m Module, a *Arena) {
	for _, nm := range Modules(m) {
		if u, ok := nm.Module.(ArenaUser); ok {
			u.SetArena(a)
		}
	}
}

// Reset takes back every buffer handed out since the previous Reset.
func (a *Arena) Reset() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for p, b := range a.inUse {
		a.free[cap(b)] = append(a.free[cap(b)], b[:cap(b)])
		delete(a.inUse, p)
	}
	for k, ts := range a.devInUse {
		a.devFree[k] = append(a.devFree[k], ts...)
		delete(a.devInUse, k)
	}
}

// Allocs returns how many buffers the arena has had to allocate so far: it
// stops growing once a loop reaches its steady state.
func (a *Arena) Allocs() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.allocs
}

// get returns a buffer of n floats valid until Reset (or release). Its
// contents are arbitrary unless the arena is nil (then it is zeroed).
func (a *Arena) get(n int) []float32 {
	if a == nil || n == 0 {
		return make([]float32, n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var b []float32
	if c := a.fit(n); c > 0 {
		l := a.free[c]
		b = l[len(l)-1][:n]
		l[len(l)-1] = nil
		a.free[c] = l[:len(l)-1]
	} else {
		b = make([]float32, n)
		a.allocs++
	}
	a.inUse[&b[0]] = b
	return b
}

// fit returns the capacity of the free buffers that serve a request for n
// floats, 0 when none does: n itself when one of exactly n is free, which
// a loop whose shapes repeat always finds from its second step on; else
// the least capacity in (n, 2n] with a buffer free. The second case serves
// a loop's odd step, such as the last, smaller batch of an evaluation,
// from the buffers of its usual steps rather than holding a second set of
// buffers for it; it gives up at most half of a buffer, for the step.
func (a *Arena) fit(n int) int {
	if len(a.free[n]) > 0 {
		return n
	}
	best := 0
	for c, l := range a.free {
		if len(l) > 0 && c > n && c <= 2*n && (best == 0 || c < best) {
			best = c
		}
	}
	return best
}

// devGet returns a contiguous 1-d tensor of n > 0 elements on dev (not
// the CPU), valid until Reset (or release), with arbitrary contents: a
// buffer handed out before, or a new zero one.
func (a *Arena) devGet(dev tensor.Device, n int) *tensor.Tensor {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := devKey{dev, n}
	var t *tensor.Tensor
	if l := a.devFree[k]; len(l) > 0 {
		t = l[len(l)-1]
		l[len(l)-1] = nil
		a.devFree[k] = l[:len(l)-1]
	} else {
		t = tensor.ZerosOn(dev, n)
		a.allocs++
	}
	a.devInUse[k] = append(a.devInUse[k], t)
	return t
}

// devTensor returns a contiguous tensor of the given shape on dev (not the
// CPU): from the arena (arbitrary contents), or a zero one for a nil
// arena or an empty shape.
func (a *Arena) devTensor(dev tensor.Device, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if a == nil || n == 0 {
		return tensor.ZerosOn(dev, shape...)
	}
	return a.devGet(dev, n).Reshape(shape...)
}

// release takes back the buffer of t before Reset when it came from the
// arena: layers release their output's gradient at the end of their
// backward pass, after which the tape drops it.
func (a *Arena) release(t *tensor.Tensor) {
	if a == nil || t == nil {
		return
	}
	if t.Device() != tensor.CPU && t.Device() != "" {
		a.releaseDev(t)
		return
	}
	if len(t.Storage()) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := &t.Storage()[0]
	// Only a tensor covering its whole buffer is given back: a part of a
	// buffer (a view made by some other op) may share it with gradients
	// still to be consumed.
	if b, ok := a.inUse[p]; ok && t.Offset() == 0 && t.Numel() == len(b) {
		delete(a.inUse, p)
		a.free[cap(b)] = append(a.free[cap(b)], b[:cap(b)])
	}
}

// releaseDev is release for a device tensor: only a tensor covering a
// whole buffer of the arena is given back, as on the CPU.
func (a *Arena) releaseDev(t *tensor.Tensor) {
	if t.Offset() != 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := devKey{t.Device(), t.Numel()}
	l := a.devInUse[k]
	for i, u := range l {
		if u.SharesStorage(t) {
			l[i] = l[len(l)-1]
			l[len(l)-1] = nil
			a.devInUse[k] = l[:len(l)-1]
			a.devFree[k] = append(a.devFree[k], u)
			return
		}
	}
}

// tensor returns a tensor of the given shape in the requested layout (see
// layout.go) on a buffer valid until Reset, with arbitrary contents (zero
// for a nil arena).
func (a *Arena) tensor(cm bool, shape ...int) *tensor.Tensor {
	if a == nil {
		return newLayout(cm, shape...)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	b := a.get(n)
	if !cm || len(shape) < 2 {
		return tensor.FromSlice(b, shape...)
	}
	perm := append([]int{shape[1], shape[0]}, shape[2:]...)
	axes := make([]int, len(shape))
	for i := range axes {
		axes[i] = i
	}
	axes[0], axes[1] = 1, 0
	return tensor.FromSlice(b, perm...).Permute(axes...)
}
