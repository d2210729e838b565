package mpi

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/duel-ssl/duel/duel/dist"
)

// Request is a collective started by IAllReduce or IAllGather, a
// dist.Request. Until it completes, MPI reads and writes the collective's
// Go buffers after the starting call has returned: the Request pins them
// (runtime.Pinner) and its Comm keeps the Request reachable, so they stay
// where MPI saw them and alive even if the caller drops the Request.
type Request struct {
	c  *Comm
	fn string // the starting call, for messages
	// h is the MPI_Request handle: a pointer in Open MPI, an int in the
	// first 4 bytes in MPICH (see abi).
	h    uint64
	pin  runtime.Pinner
	done bool
	err  error // the completion's error, returned again by later calls
}

var _ dist.Request = (*Request)(nil)

// newRequest returns a request of c for the call fn that pins the buffers
// at ptrs (nil ones, of empty slices, are skipped) and registers it as
// pending. The caller holds callMu.
func (c *Comm) newRequest(fn string, ptrs ...unsafe.Pointer) *Request {
	r := &Request{c: c, fn: fn}
	for _, p := range ptrs {
		if p != nil {
			r.pin.Pin(p)
		}
	}
	c.pending[r] = struct{}{}
	return r
}

// finish records the completion of r with err, unpins its buffers and
// forgets it. The caller holds callMu.
func (r *Request) finish(err error) {
	r.done, r.err = true, err
	r.pin.Unpin()
	delete(r.c.pending, r)
}

// wait is Wait with callMu held.
func (r *Request) wait() error {
	if r.done {
		return r.err
	}
	err := check("MPI_Wait", callRaw(lib.MPI_Wait, uintptr(unsafe.Pointer(&r.h)), lib.abi.statusIgnore))
	if err != nil {
		err = fmt.Errorf("mpi: completing %s: %w", r.fn, err)
	}
	r.finish(err)
	return err
}

// Wait blocks until the collective has completed (MPI_Wait). It holds the
// process's MPI serialisation while it blocks: other goroutines' MPI calls
// wait for it, so a goroutine that must go on issuing calls polls Test
// instead. After completion, Wait returns the same result at once.
func (r *Request) Wait() error {
	callMu.Lock()
	defer callMu.Unlock()
	return r.wait()
}

// Test reports whether the collective has completed, making progress on it
// (MPI_Test); after true, or an error, Wait returns at once with the same
// error.
func (r *Request) Test() (bool, error) {
	callMu.Lock()
	defer callMu.Unlock()
	if r.done {
		return true, r.err
	}
	var flag int32
	err := check("MPI_Test", callRaw(lib.MPI_Test, uintptr(unsafe.Pointer(&r.h)), uintptr(unsafe.Pointer(&flag)), lib.abi.statusIgnore))
	if err != nil {
		err = fmt.Errorf("mpi: testing %s: %w", r.fn, err)
		r.finish(err)
		return true, err
	}
	if flag == 0 {
		return false, nil
	}
	r.finish(nil)
	return true, nil
}
