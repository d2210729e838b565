package dist

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// ErrAborted is returned by the collectives of a Local group after one of
// its ranks called Abort.
var ErrAborted = errors.New("dist: the group was aborted")

// Local is one rank of an in-process group made by NewLocal: the ranks are
// goroutines of one program, and the collectives exchange copies of their
// buffers through shared memory. Tests use it to run data-parallel
// training without MPI; sums are taken in rank order, so every rank gets
// the same bits, as with MPI's reductions.
type Local struct {
	hub    *hub
	rank   int
	seq    uint64
	closed bool
}

// hub is the state shared by the ranks of a Local group: the collectives
// in progress, keyed by their sequence number (every rank calls the
// collectives in the same order, so the k-th call of each rank meets the
// k-th call of the others).
type hub struct {
	n      int
	mu     sync.Mutex
	rounds map[uint64]*round
	abort  chan struct{}
	once   sync.Once
}

// round is one collective: every rank's contribution, and a channel
// closed when all have arrived.
type round struct {
	parts   [][]byte
	arrived int
	done    chan struct{}
}

// NewLocal returns the n ranks of a new in-process group.
func NewLocal(n int) []*Local {
	h := &hub{n: n, rounds: map[uint64]*round{}, abort: make(chan struct{})}
	out := make([]*Local, n)
	for r := range out {
		out[r] = &Local{hub: h, rank: r}
	}
	return out
}

// Rank returns this rank's index.
func (l *Local) Rank() int { return l.rank }

// Size returns the number of ranks.
func (l *Local) Size() int { return l.hub.n }

// start deposits a copy of data as this rank's part of its next
// collective and returns the collective.
func (l *Local) start(data []byte) (*round, error) {
	if l.closed {
		return nil, ErrClosed
	}
	h := l.hub
	select {
	case <-h.abort:
		return nil, ErrAborted
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	seq := l.seq
	l.seq++
	rd := h.rounds[seq]
	if rd == nil {
		rd = &round{parts: make([][]byte, h.n), done: make(chan struct{})}
		h.rounds[seq] = rd
	}
	rd.parts[l.rank] = append([]byte(nil), data...)
	rd.arrived++
	if rd.arrived == h.n {
		delete(h.rounds, seq)
		close(rd.done)
	}
	return rd, nil
}

// wait blocks until every rank has joined rd and returns the parts.
func (l *Local) wait(rd *round) ([][]byte, error) {
	select {
	case <-rd.done:
		return rd.parts, nil
	case <-l.hub.abort:
		return nil, ErrAborted
	}
}

// exchange is start then wait.
func (l *Local) exchange(data []byte) ([][]byte, error) {
	rd, err := l.start(data)
	if err != nil {
		return nil, err
	}
	return l.wait(rd)
}

// Barrier returns once every rank has entered it.
func (l *Local) Barrier() error {
	_, err := l.exchange(nil)
	return err
}

// Broadcast copies root's buf into every rank's buf.
func (l *Local) Broadcast(buf []byte, root int) error {
	if root < 0 || root >= l.hub.n {
		return fmt.Errorf("dist: Broadcast from rank %d of a group of %d", root, l.hub.n)
	}
	parts, err := l.exchange(buf)
	if err != nil {
		return err
	}
	if len(parts[root]) != len(buf) {
		return errLength("Broadcast", len(buf), len(parts[root]))
	}
	copy(buf, parts[root])
	return nil
}

// AllReduce sums every rank's buf into buf, in rank order.
func (l *Local) AllReduce(buf []float32) error {
	parts, err := l.exchange(Float32Bytes(buf))
	if err != nil {
		return err
	}
	return sumFloat32(buf, parts)
}

// sumFloat32 writes the element-wise sum of parts (float32 bytes), taken
// in rank order, into buf.
func sumFloat32(buf []float32, parts [][]byte) error { return sumParts("AllReduce", buf, parts) }

// sumParts writes the element-wise sum of parts (the bytes of each rank's
// values), taken in rank order, into buf.
func sumParts[T float32 | float64](op string, buf []T, parts [][]byte) error {
	size := int(unsafe.Sizeof(T(0)))
	for r, p := range parts {
		if len(p) != size*len(buf) {
			return fmt.Errorf("dist: %s: rank %d sent %d values, this rank %d", op, r, len(p)/size, len(buf))
		}
	}
	for i := range buf {
		var s T
		for _, p := range parts {
			s += unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(p))), len(buf))[i]
		}
		buf[i] = s
	}
	return nil
}

// AllReduceFloat64 sums every rank's buf into buf, in rank order.
func (l *Local) AllReduceFloat64(buf []float64) error {
	parts, err := l.exchange(Float64Bytes(buf))
	if err != nil {
		return err
	}
	return sumParts("AllReduceFloat64", buf, parts)
}

// IAllReduce starts AllReduce of buf: this rank's values are taken now,
// the sum is written into buf by Wait (or the Test that reports
// completion).
func (l *Local) IAllReduce(buf []float32) (Request, error) {
	rd, err := l.start(Float32Bytes(buf))
	if err != nil {
		return nil, err
	}
	return &localRequest{l: l, rd: rd, buf: buf}, nil
}

// localRequest is a Local group's IAllReduce in progress.
type localRequest struct {
	l        *Local
	rd       *round
	buf      []float32
	finished bool
	err      error
}

// Wait blocks until every rank has started the collective and writes the
// sum.
func (q *localRequest) Wait() error {
	if q.finished {
		return q.err
	}
	parts, err := q.l.wait(q.rd)
	if err == nil {
		err = sumFloat32(q.buf, parts)
	}
	q.finished, q.err = true, err
	return err
}

// Test reports whether every rank has started the collective, finishing
// it when they have.
func (q *localRequest) Test() (bool, error) {
	if q.finished {
		return true, q.err
	}
	select {
	case <-q.rd.done:
		return true, q.Wait()
	default:
		return false, nil
	}
}

// AllGather writes every rank's send, in rank order, into recv.
func (l *Local) AllGather(send, recv []byte) error {
	if len(recv) != l.hub.n*len(send) {
		return errLength("AllGather", len(recv), l.hub.n*len(send))
	}
	parts, err := l.exchange(send)
	if err != nil {
		return err
	}
	for r, p := range parts {
		if len(p) != len(send) {
			return fmt.Errorf("dist: AllGather: rank %d sent %d bytes, this rank %d", r, len(p), len(send))
		}
		copy(recv[r*len(send):], p)
	}
	return nil
}

// Abort makes every collective of the group, in progress or to come,
// return ErrAborted.
func (l *Local) Abort(int) error {
	l.hub.once.Do(func() { close(l.hub.abort) })
	return nil
}

// Close leaves the group.
func (l *Local) Close() error {
	l.closed = true
	return nil
}

var _ Comm = (*Local)(nil)
var _ Comm = Single{}
