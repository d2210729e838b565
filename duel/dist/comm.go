// Package dist is data-parallel training's process group: the Comm
// interface the trainer talks to, an in-process implementation for tests
// (NewLocal), and the pieces of data parallelism that do not depend on the
// transport (the shard of a global batch, gradient buckets, the check
// that every rank holds the same state).
//
// The transport of real runs is MPI (package dist/mpi, bound at run time
// without cgo); a process started without an MPI launcher uses Single, a
// group of one that copies nothing.
package dist

import "errors"

// Comm is a group of processes (ranks) that run the same program on
// different shards of the data. Every collective must be called by every
// rank, in the same order, with buffers of the same length; the result is
// the same on every rank.
type Comm interface {
	// Rank is this process's index in [0, Size()).
	Rank() int
	// Size is the number of ranks.
	Size() int
	// Barrier returns once every rank has entered it.
	Barrier() error
	// Broadcast copies root's buf into every other rank's buf.
	Broadcast(buf []byte, root int) error
	// AllReduce replaces buf, on every rank, by the element-wise sum of
	// every rank's buf.
	AllReduce(buf []float32) error
	// AllReduceFloat64 is AllReduce for float64 values.
	AllReduceFloat64(buf []float64) error
	// IAllReduce starts AllReduce of buf and returns at once; buf must not
	// be touched until the request's Wait returns.
	IAllReduce(buf []float32) (Request, error)
	// AllGather writes every rank's send, in rank order, into recv
	// (len(recv) == Size()*len(send)).
	AllGather(send, recv []byte) error
	// Abort stops every rank of the group (a failed rank takes the others
	// down instead of leaving them blocked in a collective).
	Abort(code int) error
	// Close leaves the group; the Comm is unusable afterwards.
	Close() error
}

// Request is a collective started by a non-blocking call.
type Request interface {
	// Wait blocks until the collective has completed.
	Wait() error
	// Test reports whether the collective has completed, making progress
	// on it; after true, Wait returns at once.
	Test() (bool, error)
}

// ErrClosed is returned by a Comm used after Close.
var ErrClosed = errors.New("dist: communicator closed")
