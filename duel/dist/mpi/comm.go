package mpi

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/duel-ssl/duel/duel/dist"
)

// Comm is an MPI communicator (MPI_COMM_WORLD, from Init) as a dist.Comm.
// Its methods may be called from any goroutine; the MPI calls of the
// process are serialised (see Init). The usual MPI rules hold: every rank
// calls the same collectives in the same order with matching lengths, and
// a collective's send and receive buffers do not overlap.
type Comm struct {
	h          uintptr // the MPI_Comm handle
	rank, size int
	own        bool        // Init called MPI_Init_thread; Close calls MPI_Finalize
	closed     atomic.Bool // written under callMu; read without it by Abort
	// pending are the started, not yet completed requests, which keep
	// their buffers pinned and reachable. Guarded by callMu.
	pending map[*Request]struct{}
}

var _ dist.Comm = (*Comm)(nil)

// Rank is this process's index in [0, Size()) (MPI_Comm_rank).
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks (MPI_Comm_size).
func (c *Comm) Size() int { return c.size }

// Implementation names the MPI implementation of the loaded library:
// "Open MPI" or "MPICH" (MPICH's ABI: MPICH, Intel MPI, MVAPICH2).
func (c *Comm) Implementation() string { return lib.abi.name }

// lock takes callMu for the call fn of c, or returns an error wrapping
// dist.ErrClosed (without the lock) after Close.
func (c *Comm) lock(fn string) error {
	callMu.Lock()
	if c.closed.Load() {
		callMu.Unlock()
		return fmt.Errorf("mpi: %s: %w", fn, dist.ErrClosed)
	}
	return nil
}

// count converts the length n of a buffer given to fn into an MPI count (a
// C int).
func count(fn string, n int) (uintptr, error) {
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("mpi: %s: %d elements exceed MPI's int count", fn, n)
	}
	return uintptr(n), nil
}

// Barrier returns once every rank has entered it (MPI_Barrier).
func (c *Comm) Barrier() error {
	if err := c.lock("MPI_Barrier"); err != nil {
		return err
	}
	defer callMu.Unlock()
	return check("MPI_Barrier", callRaw(lib.MPI_Barrier, c.h))
}

// Broadcast copies root's buf into every other rank's buf (MPI_Bcast of
// bytes). A root outside [0, Size()) is MPI's error (MPI_ERR_ROOT), returned
// as *Error.
func (c *Comm) Broadcast(buf []byte, root int) error {
	n, err := count("MPI_Bcast", len(buf))
	if err != nil {
		return err
	}
	if err := c.lock("MPI_Bcast"); err != nil {
		return err
	}
	defer callMu.Unlock()
	return check("MPI_Bcast", callRaw(lib.MPI_Bcast, uintptr(unsafe.Pointer(unsafe.SliceData(buf))), n, lib.abi.byte, uintptr(root), c.h))
}

// AllReduce replaces buf, on every rank, by the element-wise sum of every
// rank's buf (MPI_Allreduce in place, MPI_FLOAT, MPI_SUM). The order of
// the sums is MPI's: it may differ between runs with another number of
// ranks or another implementation, never between the ranks of a run.
func (c *Comm) AllReduce(buf []float32) error {
	return c.allReduce(unsafe.Pointer(unsafe.SliceData(buf)), len(buf), lib.abi.float)
}

// AllReduceFloat64 is AllReduce for float64 values (MPI_DOUBLE).
func (c *Comm) AllReduceFloat64(buf []float64) error {
	return c.allReduce(unsafe.Pointer(unsafe.SliceData(buf)), len(buf), lib.abi.double)
}

// allReduce sums the n values of MPI type dtype at p over the ranks, in
// place (MPI_Allreduce with MPI_IN_PLACE and MPI_SUM).
func (c *Comm) allReduce(p unsafe.Pointer, n int, dtype uintptr) error {
	cn, err := count("MPI_Allreduce", n)
	if err != nil {
		return err
	}
	if err := c.lock("MPI_Allreduce"); err != nil {
		return err
	}
	defer callMu.Unlock()
	return check("MPI_Allreduce", callRaw(lib.MPI_Allreduce, lib.abi.inPlace, uintptr(p), cn, dtype, lib.abi.sum, c.h))
}

// AllGather writes every rank's send, in rank order, into recv
// (MPI_Allgather of bytes); len(recv) must be Size()*len(send).
func (c *Comm) AllGather(send, recv []byte) error {
	n, err := c.gatherCount("MPI_Allgather", send, recv)
	if err != nil {
		return err
	}
	if err := c.lock("MPI_Allgather"); err != nil {
		return err
	}
	defer callMu.Unlock()
	return check("MPI_Allgather", callRaw(lib.MPI_Allgather,
		uintptr(unsafe.Pointer(unsafe.SliceData(send))), n, lib.abi.byte,
		uintptr(unsafe.Pointer(unsafe.SliceData(recv))), n, lib.abi.byte, c.h))
}

// gatherCount checks the lengths of an all-gather's buffers and returns
// the count of each rank's part.
func (c *Comm) gatherCount(fn string, send, recv []byte) (uintptr, error) {
	if len(recv) != c.size*len(send) {
		return 0, fmt.Errorf("mpi: %s: recv holds %d bytes, want %d ranks × %d", fn, len(recv), c.size, len(send))
	}
	return count(fn, len(send))
}

// AllGatherV is AllGather with a length per rank (MPI_Allgatherv of
// bytes): rank r sends counts[r] bytes, and recv receives them all in rank
// order, so len(counts) == Size(), len(send) == counts[Rank()] and
// len(recv) is the sum of counts. Every rank passes the same counts.
func (c *Comm) AllGatherV(send, recv []byte, counts []int) error {
	const fn = "MPI_Allgatherv"
	if len(counts) != c.size {
		return fmt.Errorf("mpi: %s: %d counts for %d ranks", fn, len(counts), c.size)
	}
	if len(send) != counts[c.rank] {
		return fmt.Errorf("mpi: %s: rank %d sends %d bytes, counts say %d", fn, c.rank, len(send), counts[c.rank])
	}
	rc := make([]int32, c.size)
	displs := make([]int32, c.size)
	total := 0
	for r, n := range counts {
		if n < 0 || total+n > math.MaxInt32 {
			return fmt.Errorf("mpi: %s: count %d of rank %d after %d bytes is outside MPI's int range", fn, n, r, total)
		}
		rc[r], displs[r] = int32(n), int32(total)
		total += n
	}
	if len(recv) != total {
		return fmt.Errorf("mpi: %s: recv holds %d bytes, the counts sum to %d", fn, len(recv), total)
	}
	if err := c.lock(fn); err != nil {
		return err
	}
	defer callMu.Unlock()
	return check(fn, callRaw(lib.MPI_Allgatherv,
		uintptr(unsafe.Pointer(unsafe.SliceData(send))), uintptr(len(send)), lib.abi.byte,
		uintptr(unsafe.Pointer(unsafe.SliceData(recv))), uintptr(unsafe.Pointer(&rc[0])), uintptr(unsafe.Pointer(&displs[0])), lib.abi.byte, c.h))
}

// IAllReduce starts AllReduce of buf (MPI_Iallreduce) and returns at
// once; buf must not be touched until the request's Wait returns or its
// Test reports true. The request keeps buf pinned and reachable until then.
func (c *Comm) IAllReduce(buf []float32) (dist.Request, error) {
	const fn = "MPI_Iallreduce"
	n, err := count(fn, len(buf))
	if err != nil {
		return nil, err
	}
	if err := c.lock(fn); err != nil {
		return nil, err
	}
	defer callMu.Unlock()
	r := c.newRequest(fn, unsafe.Pointer(unsafe.SliceData(buf)))
	err = check(fn, callRaw(lib.MPI_Iallreduce, lib.abi.inPlace, uintptr(unsafe.Pointer(unsafe.SliceData(buf))), n,
		lib.abi.float, lib.abi.sum, c.h, uintptr(unsafe.Pointer(&r.h))))
	if err != nil {
		r.finish(err)
		return nil, err
	}
	return r, nil
}

// IAllGather starts AllGather of send into recv (MPI_Iallgather) and
// returns at once; neither buffer may be touched until the request
// completes (Wait, or Test reporting true).
func (c *Comm) IAllGather(send, recv []byte) (dist.Request, error) {
	const fn = "MPI_Iallgather"
	n, err := c.gatherCount(fn, send, recv)
	if err != nil {
		return nil, err
	}
	if err := c.lock(fn); err != nil {
		return nil, err
	}
	defer callMu.Unlock()
	r := c.newRequest(fn, unsafe.Pointer(unsafe.SliceData(send)), unsafe.Pointer(unsafe.SliceData(recv)))
	err = check(fn, callRaw(lib.MPI_Iallgather,
		uintptr(unsafe.Pointer(unsafe.SliceData(send))), n, lib.abi.byte,
		uintptr(unsafe.Pointer(unsafe.SliceData(recv))), n, lib.abi.byte, c.h, uintptr(unsafe.Pointer(&r.h))))
	if err != nil {
		r.finish(err)
		return nil, err
	}
	return r, nil
}

// Abort ends every rank of the job with the exit code code (MPI_Abort); it
// does not return when MPI honours it. It waits at most a second for
// another goroutine's MPI call to finish and then calls MPI_Abort anyway:
// its purpose is to end a job that may be blocked in a collective, and it
// is the one call made outside the serialisation. After Close it returns
// an error wrapping dist.ErrClosed (the process is no longer in the job).
func (c *Comm) Abort(code int) error {
	if c.closed.Load() {
		return fmt.Errorf("mpi: MPI_Abort: %w", dist.ErrClosed)
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		if callMu.TryLock() {
			defer callMu.Unlock()
			break
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return check("MPI_Abort", callRaw(lib.MPI_Abort, c.h, uintptr(code)))
}

// Close completes the requests still pending (MPI_Wait, in no particular
// order, as MPI allows) and calls MPI_Finalize, unless MPI was initialised
// by someone else before Init. The Comm is unusable afterwards (its
// methods return errors wrapping dist.ErrClosed) and MPI cannot be
// initialised again in this process. Later calls of Close return nil.
func (c *Comm) Close() error {
	callMu.Lock()
	defer callMu.Unlock()
	if c.closed.Load() {
		return nil
	}
	var errs []error
	for r := range c.pending {
		errs = append(errs, r.wait())
	}
	c.closed.Store(true)
	if c.own {
		errs = append(errs, check("MPI_Finalize", callRaw(lib.MPI_Finalize)))
	}
	return errors.Join(errs...)
}
