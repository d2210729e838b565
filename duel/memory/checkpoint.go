package memory

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// Checkpoint format (little-endian), version 2:
//
//	magic "DUELMEM\x00", version uint32
//	k, z, n uint32; seen int64; safe uint8
//	max age uint32 (version 2 only)
//	policy name: uint16 length + bytes; policy state: uint32 length + bytes
//	rows n*z float32; ids n int64; labels n int32; steps n int64
//	uses n int64, fresh n int64 (version 2 only; version 1 files load with
//	zero uses and features as fresh as the rows' entry steps)
//	crc32 (IEEE) of everything before it
const (
	checkpointMagic   = "DUELMEM\x00"
	checkpointVersion = 2
)

// checkpointChunk is the size of the pieces WriteTo encodes the rows and
// their metadata in, and ReadCheckpoint decodes them from: a checkpoint
// never holds a second copy of the memory.
const checkpointChunk = 64 << 10

// MarshalBinary encodes the memory (rows, ids, labels, steps, rows seen,
// options and the policy's name and state, e.g. its RNG) for a training
// checkpoint, into a buffer of its exact size: WriteTo's bytes. A policy's
// carried acceleration state is not saved: it is rebuilt at the first
// update after loading. A checkpoint written to a file is better streamed
// with WriteTo, which holds no copy of the memory.
func (m *Memory) MarshalBinary() ([]byte, error) {
	name, state, err := m.policyState()
	if err != nil {
		return nil, err
	}
	buf := sliceWriter(make([]byte, 0, m.checkpointSize(name, state)))
	if _, err := m.writeCheckpoint(&buf, name, state); err != nil {
		return nil, err // a sliceWriter does not fail
	}
	return buf, nil
}

// WriteTo writes the memory's checkpoint (MarshalBinary's bytes) to w and
// returns the bytes written. The rows and their metadata are encoded in
// pieces of 64 KiB (the checksum computed on the way), so that writing a
// checkpoint of a large memory does not hold a second copy of it; w gets
// writes of that size (a file wants no more buffering). An error of w is
// returned as it is; the checkpoint is then incomplete.
func (m *Memory) WriteTo(w io.Writer) (int64, error) {
	name, state, err := m.policyState()
	if err != nil {
		return 0, err
	}
	return m.writeCheckpoint(w, name, state)
}

// policyState returns the policy's name and its saved state (none for a
// policy without one).
func (m *Memory) policyState() (string, []byte, error) {
	var state []byte
	if bm, ok := m.policy.(encoding.BinaryMarshaler); ok {
		var err error
		if state, err = bm.MarshalBinary(); err != nil {
			return "", nil, fmt.Errorf("memory checkpoint: policy %s state: %w", m.policy.Name(), err)
		}
	}
	return m.policy.Name(), state, nil
}

// checkpointSize is the size in bytes of the memory's checkpoint with the
// policy's name and state.
func (m *Memory) checkpointSize(name string, state []byte) int {
	n := m.Len()
	return len(checkpointMagic) + 4 + 3*4 + 8 + 1 + 4 + 2 + len(name) + 4 + len(state) +
		n*(4*m.z+8+4+8+8+8) + 4
}

// writeCheckpoint writes the checkpoint with the policy's name and state.
func (m *Memory) writeCheckpoint(w io.Writer, name string, state []byte) (int64, error) {
	e := &chunkEncoder{w: w, buf: make([]byte, 0, checkpointChunk)}
	e.buf = append(e.buf, checkpointMagic...)
	for _, v := range []any{uint32(checkpointVersion), []uint32{uint32(m.k), uint32(m.z), uint32(m.Len())}, m.seen, m.safe,
		uint32(m.maxAge), uint16(len(name))} {
		e.buf, _ = binary.Append(e.buf, binary.LittleEndian, v) // fixed-size values, 31 bytes in all: no error
	}
	encodeSlice(e, []byte(name), 1)
	encodeSlice(e, []uint32{uint32(len(state))}, 4)
	encodeSlice(e, state, 1)
	encodeSlice(e, m.rows, 4)
	encodeSlice(e, m.ids, 8)
	encodeSlice(e, m.labels, 4)
	encodeSlice(e, m.steps, 8)
	encodeSlice(e, m.uses, 8)
	encodeSlice(e, m.fresh, 8)
	e.flush()
	if e.err == nil {
		var sum [4]byte
		binary.LittleEndian.PutUint32(sum[:], e.crc)
		e.write(sum[:])
	}
	return e.n, e.err
}

// chunkEncoder writes a checkpoint in pieces of at most cap(buf) bytes,
// computing its checksum.
type chunkEncoder struct {
	w   io.Writer
	buf []byte // the piece being encoded
	crc uint32 // of the pieces written
	n   int64  // bytes written
	err error  // the first error of w
}

// flush writes the piece encoded and empties it.
func (e *chunkEncoder) flush() {
	if len(e.buf) > 0 {
		e.crc = crc32.Update(e.crc, crc32.IEEETable, e.buf)
		e.write(e.buf)
	}
	e.buf = e.buf[:0]
}

// write writes p unless an earlier write failed.
func (e *chunkEncoder) write(p []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(p)
	e.n += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	e.err = err
}

// encodeSlice appends s, little-endian (size bytes a value), to e's piece,
// writing each piece as it fills.
func encodeSlice[T any](e *chunkEncoder, s []T, size int) {
	for len(s) > 0 {
		room := (cap(e.buf) - len(e.buf)) / size
		if room == 0 {
			e.flush()
			continue
		}
		take := min(room, len(s))
		e.buf, _ = binary.Append(e.buf, binary.LittleEndian, s[:take]) // a slice of fixed-size values: no error
		s = s[take:]
	}
}

// sliceWriter appends what is written to it.
type sliceWriter []byte

func (s *sliceWriter) Write(p []byte) (int, error) {
	*s = append(*s, p...)
	return len(p), nil
}

// UnmarshalBinary replaces m with a memory decoded from data (written by
// MarshalBinary or WriteTo), as ReadCheckpoint does.
func (m *Memory) UnmarshalBinary(data []byte) error {
	return m.ReadCheckpoint(bytes.NewReader(data), int64(len(data)))
}

// ReadCheckpoint replaces m with a memory decoded from the size bytes of a
// checkpoint (written by WriteTo or MarshalBinary) that r reads, such as
// a file: the rows and their metadata are decoded into the memory's slices
// in pieces of 64 KiB, so that reading it holds no second copy of the
// memory. The policy is m's own when it has the checkpoint's policy name,
// with the saved state restored into it, so that a memory built with
// another implementation of a policy keeps it (training on CUDA resumes
// with the GPU's DUEL, cudaduel, from any run's checkpoint); otherwise it
// is rebuilt from its registered name and saved state. r is read for
// size bytes and no further. Everything is validated, the checksum first
// (after the magic, the size bytes are read to the end for it even when
// the header is wrong): a truncated, corrupted or inconsistent checkpoint,
// or one r fails to read, is an error and m is left unchanged.
// UnmarshalBinary is ReadCheckpoint of a byte slice; both give the same
// errors. When m was made for the checkpoint's sizes (New with its K and
// Z, as a resumed run's memory is), the memory read has the capacity of a
// full one reserved, as a fresh memory reserves it at its first fill, so
// that the first Add after it appends where the rows are.
func (m *Memory) ReadCheckpoint(r io.Reader, size int64) error {
	got, state, err := decodeCheckpoint(r, size, m.k, m.z)
	if err != nil {
		return fmt.Errorf("memory checkpoint: %w", err)
	}
	if m.policy != nil && m.policy.Name() == got.policy.Name() {
		if um, ok := m.policy.(encoding.BinaryUnmarshaler); ok {
			if err := um.UnmarshalBinary(state); err != nil {
				return fmt.Errorf("memory checkpoint: policy %s state: %w", m.policy.Name(), err)
			}
		}
		got.policy = m.policy
	}
	*m = *got
	return nil
}

// bodyReader reads the body of a checkpoint (all of it but the checksum,
// left bytes) from r, computing its checksum.
type bodyReader struct {
	r     io.Reader
	left  int64  // bytes of the body not yet read
	size  int64  // bytes of the checkpoint
	crc   uint32 // of the bytes read
	ioErr error  // the first error of r, or its early end
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.crc = crc32.Update(b.crc, crc32.IEEETable, p[:n])
	b.left -= int64(n)
	switch {
	case err == io.EOF && b.left > 0:
		err = b.ended()
	case err == io.EOF:
		err = nil // the checksum follows
	case err != nil:
		if b.ioErr == nil {
			b.ioErr = fmt.Errorf("reading: %w", err)
		}
		err = b.ioErr
	}
	return n, err
}

// ended records that r ended before the checkpoint's size, and returns the
// error.
func (b *bodyReader) ended() error {
	if b.ioErr == nil {
		b.ioErr = fmt.Errorf("the input ended after %d of its %d bytes", b.size-4-b.left, b.size)
	}
	return b.ioErr
}

// finish reads the rest of the body and the checksum after it, and
// returns r's error, or a mismatch of the checksum.
func (b *bodyReader) finish() error {
	if b.ioErr == nil {
		io.Copy(io.Discard, b) // an error is b.ioErr
	}
	var sum [4]byte
	if b.ioErr == nil {
		if n, err := io.ReadFull(b.r, sum[:]); err != nil {
			b.left -= int64(n) // the checksum's bytes read, for ended's count
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				b.ended()
			} else {
				b.ioErr = fmt.Errorf("reading: %w", err)
			}
		}
	}
	if b.ioErr != nil {
		return b.ioErr
	}
	if binary.LittleEndian.Uint32(sum[:]) != b.crc {
		return errors.New("checksum mismatch (truncated or corrupted file)")
	}
	return nil
}

// decodeCheckpoint decodes and validates the checkpoint of size bytes r
// reads, and returns the policy's saved state too. A memory of k rows of
// z values gets the capacity of a full one (see parseCheckpoint).
func decodeCheckpoint(r io.Reader, size int64, k, z int) (*Memory, []byte, error) {
	if size < int64(len(checkpointMagic)+4+4) {
		return nil, nil, fmt.Errorf("%d bytes, too short for a memory checkpoint", size)
	}
	body := &bodyReader{r: r, left: size - 4, size: size}
	var magic [len(checkpointMagic)]byte
	if _, err := io.ReadFull(body, magic[:]); err != nil {
		return nil, nil, err // body.ioErr: size is at least 16
	}
	if string(magic[:]) != checkpointMagic {
		return nil, nil, errors.New("not a memory checkpoint (bad magic)")
	}
	// The checksum is checked before the parse's error is returned: a
	// damaged checkpoint is reported as such, whatever its header says.
	m, state, err := parseCheckpoint(body, k, z)
	if ferr := body.finish(); ferr != nil {
		return nil, nil, ferr
	}
	if err != nil {
		return nil, nil, err
	}
	if err := m.checkRows(); err != nil {
		return nil, nil, err
	}
	return m, state, nil
}

// parseCheckpoint decodes what follows the magic in body, checking the
// header and the sizes before any row is read. When the checkpoint's
// memory has reserveK rows of reserveZ values, its slices are made with
// the capacity of a full memory (Memory.reserve's): the first Add of a
// memory resumed partly full then fills it without growing them, which
// would hold the rows read and their copy of K rows at once. Other sizes
// get the rows read only: until the checksum after the rows is checked,
// the header's K is trusted for an allocation only when the caller's
// memory was made for it (a damaged K could ask for up to 2^48 values).
func parseCheckpoint(body *bodyReader, reserveK, reserveZ int) (*Memory, []byte, error) {
	read := func(v any) error { return binary.Read(body, binary.LittleEndian, v) }
	var version uint32
	var dims [3]uint32
	var seen int64
	var safe bool
	var nameLen uint16
	if read(&version) != nil || version < 1 || version > checkpointVersion {
		return nil, nil, fmt.Errorf("checkpoint version %d, expected 1..%d", version, checkpointVersion)
	}
	var maxAge uint32
	if err := errors.Join(read(&dims), read(&seen), read(&safe)); err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	if version >= 2 {
		if err := read(&maxAge); err != nil {
			return nil, nil, fmt.Errorf("header: %w", err)
		}
		if maxAge > math.MaxInt32 {
			return nil, nil, fmt.Errorf("maximum row age %d, expected below 2^31", maxAge)
		}
	}
	if err := read(&nameLen); err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	k, z, n := int(dims[0]), int(dims[1]), int(dims[2])
	if k < 1 || k > maxRows || z < 1 || z > maxZ || n > k || seen < int64(n) {
		return nil, nil, fmt.Errorf("inconsistent sizes k=%d z=%d rows=%d seen=%d", k, z, n, seen)
	}
	name := make([]byte, nameLen)
	var stateLen uint32
	if err := errors.Join(read(name), read(&stateLen)); err != nil {
		return nil, nil, fmt.Errorf("policy: %w", err)
	}
	if int64(stateLen) > body.left {
		return nil, nil, fmt.Errorf("policy state of %d bytes, only %d left", stateLen, body.left)
	}
	state := make([]byte, stateLen)
	if _, err := io.ReadFull(body, state); err != nil {
		return nil, nil, err // body.ioErr
	}
	// rows, ids, labels, steps (and uses, fresh from version 2): 4z + 8 +
	// 4 + 8 (+ 16) bytes per row.
	perRow := 4*int64(z) + 20
	if version >= 2 {
		perRow += 16
	}
	if want := int64(n) * perRow; body.left != want {
		return nil, nil, fmt.Errorf("%d bytes of rows, expected %d for %d rows of %d", body.left, want, n, z)
	}
	policy, err := NewPolicy(string(name), 0)
	if err != nil {
		return nil, nil, err
	}
	if um, ok := policy.(encoding.BinaryUnmarshaler); ok {
		if err := um.UnmarshalBinary(state); err != nil {
			return nil, nil, fmt.Errorf("policy %s state: %w", name, err)
		}
	} else if len(state) != 0 {
		return nil, nil, fmt.Errorf("policy %s has no state, found %d bytes", name, len(state))
	}
	c := n
	if k == reserveK && z == reserveZ {
		c = k
	}
	m := &Memory{k: k, z: z, policy: policy, safe: safe, maxAge: int(maxAge), seen: seen, gen: 1,
		rows: make([]float32, n*z, c*z), ids: make([]int64, n, c), labels: make([]int32, n, c),
		steps: make([]int64, n, c), uses: make([]int64, n, c), fresh: make([]int64, n, c)}
	buf := make([]byte, min(checkpointChunk, n*int(perRow)))
	err = errors.Join(decodeSlice(body, buf, m.rows, 4), decodeSlice(body, buf, m.ids, 8),
		decodeSlice(body, buf, m.labels, 4), decodeSlice(body, buf, m.steps, 8))
	if version >= 2 {
		err = errors.Join(err, decodeSlice(body, buf, m.uses, 8), decodeSlice(body, buf, m.fresh, 8))
	} else {
		copy(m.fresh, m.steps)
	}
	if err != nil {
		return nil, nil, err // body.ioErr: the sizes were checked
	}
	return m, state, nil
}

// decodeSlice fills s with little-endian values of size bytes read from
// r, through buf.
func decodeSlice[T any](r io.Reader, buf []byte, s []T, size int) error {
	per := max(len(buf)/size, 1)
	for len(s) > 0 {
		take := min(per, len(s))
		p := buf[:take*size]
		if _, err := io.ReadFull(r, p); err != nil {
			return err
		}
		binary.Decode(p, binary.LittleEndian, s[:take]) // p holds exactly s[:take]: no error
		s = s[take:]
	}
	return nil
}

// checkRows checks what a memory's rows hold: unit rows, labels -1 or a
// class, uses >= 0 and features embedded no earlier than their rows
// entered.
func (m *Memory) checkRows() error {
	z := m.z
	for i := range m.ids {
		var ss float64
		for _, v := range m.rows[i*z : (i+1)*z] {
			ss += float64(v) * float64(v)
		}
		if !(math.Abs(ss-1) < 1e-3) {
			return fmt.Errorf("row %d has squared norm %v, expected 1 (rows are L2-normalised)", i, ss)
		}
		if m.labels[i] < -1 {
			return fmt.Errorf("row %d has label %d, expected -1 (unknown) or a class >= 0", i, m.labels[i])
		}
		if m.uses[i] < 0 {
			return fmt.Errorf("row %d was used %d times as a negative, expected >= 0", i, m.uses[i])
		}
		if m.fresh[i] < m.steps[i] {
			return fmt.Errorf("row %d was embedded at step %d, before it entered at step %d", i, m.fresh[i], m.steps[i])
		}
	}
	return nil
}
