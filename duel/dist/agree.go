package dist

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
)

// Agree checks that every rank passes the same hash of the state named
// what (the parameters, the memory, ...): data-parallel ranks apply the
// same updates to the same values, so their states must stay identical;
// a difference means the ranks diverged (a non-deterministic kernel, a
// rank fed other data), and training must stop rather than go on with
// models that silently differ. The error names the ranks that differ from
// rank 0.
func Agree(c Comm, what string, hash uint64) error {
	if c.Size() == 1 {
		return nil
	}
	send := binary.LittleEndian.AppendUint64(nil, hash)
	recv := make([]byte, 8*c.Size())
	if err := c.AllGather(send, recv); err != nil {
		return fmt.Errorf("dist: comparing %s across ranks: %w", what, err)
	}
	h0 := binary.LittleEndian.Uint64(recv)
	var differ []int
	for r := 1; r < c.Size(); r++ {
		if binary.LittleEndian.Uint64(recv[8*r:]) != h0 {
			differ = append(differ, r)
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("dist: the ranks diverged: %s differs from rank 0's on rank(s) %v (hash %016x on rank 0)", what, differ, h0)
	}
	return nil
}

// AnyTrue returns, on every rank, whether any rank passed true: ranks
// agree on stopping (an interrupt seen by one rank) at the same step, so
// none is left waiting in a collective.
func AnyTrue(c Comm, v bool) (bool, error) {
	if c.Size() == 1 {
		return v, nil
	}
	buf := []float64{0}
	if v {
		buf[0] = 1
	}
	if err := c.AllReduceFloat64(buf); err != nil {
		return false, err
	}
	return buf[0] > 0, nil
}

// Hasher is an FNV-1a hash of float32 values' bits, for Agree.
type Hasher struct{ h hashWriter }

type hashWriter interface {
	Write([]byte) (int, error)
	Sum64() uint64
}

// NewHasher returns an empty hash.
func NewHasher() *Hasher { return &Hasher{h: fnv.New64a()} }

// Float32s adds the bits of v.
func (h *Hasher) Float32s(v []float32) {
	h.h.Write(Float32Bytes(v)) // the machine's byte order: ranks of one job share it
}

// Int64s adds v.
func (h *Hasher) Int64s(v []int64) {
	h.h.Write(Int64Bytes(v))
}

// Sum returns the hash.
func (h *Hasher) Sum() uint64 { return h.h.Sum64() }

// Bytes adds b.
func (h *Hasher) Bytes(b []byte) { h.h.Write(b) }
