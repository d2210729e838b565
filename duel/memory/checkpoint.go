package memory

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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

// MarshalBinary encodes the memory (rows, ids, labels, steps, rows seen,
// options and the policy's name and state, e.g. its RNG) for a training
// checkpoint. A policy's carried acceleration state is not saved: it is
// rebuilt at the first update after loading.
func (m *Memory) MarshalBinary() ([]byte, error) {
	var state []byte
	if bm, ok := m.policy.(encoding.BinaryMarshaler); ok {
		var err error
		if state, err = bm.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("memory checkpoint: policy %s state: %w", m.policy.Name(), err)
		}
	}
	name := m.policy.Name()
	// The checkpoint is written into a buffer of its exact size: a growing
	// buffer (and binary.Write's encoded copy of each slice) held several
	// copies of the rows while a checkpoint of a large memory was written.
	parts := []any{uint32(checkpointVersion), []uint32{uint32(m.k), uint32(m.z), uint32(m.Len())}, m.seen, m.safe,
		uint32(m.maxAge), uint16(len(name)), name, uint32(len(state)), state,
		m.rows, m.ids, m.labels, m.steps, m.uses, m.fresh}
	size := len(checkpointMagic) + 4 // the magic and the CRC
	for _, v := range parts {
		if s, ok := v.(string); ok {
			size += len(s)
		} else {
			size += binary.Size(v)
		}
	}
	buf := append(make([]byte, 0, size), checkpointMagic...)
	for _, v := range parts {
		switch v := v.(type) {
		case string:
			buf = append(buf, v...)
		case []byte:
			buf = append(buf, v...)
		default:
			buf, _ = binary.Append(buf, binary.LittleEndian, v) // fixed-size values: no error
		}
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.ChecksumIEEE(buf)), nil
}

// UnmarshalBinary replaces m with a memory decoded from data (written by
// MarshalBinary). The policy is m's own when it has the checkpoint's
// policy name, with the saved state restored into it, so that a memory
// built with another implementation of a policy keeps it (training on
// CUDA resumes with the GPU's DUEL, cudaduel, from any run's
// checkpoint); otherwise it is rebuilt from its registered name and saved
// state. Everything is validated: a truncated, corrupted or inconsistent
// checkpoint is an error and m is left unchanged.
func (m *Memory) UnmarshalBinary(data []byte) error {
	got, state, err := decodeCheckpoint(data)
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

// decodeCheckpoint decodes and validates a checkpoint written by
// MarshalBinary, and returns the policy's saved state too.
func decodeCheckpoint(data []byte) (*Memory, []byte, error) {
	if len(data) < len(checkpointMagic)+4+4 {
		return nil, nil, fmt.Errorf("%d bytes, too short for a memory checkpoint", len(data))
	}
	if string(data[:len(checkpointMagic)]) != checkpointMagic {
		return nil, nil, errors.New("not a memory checkpoint (bad magic)")
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, nil, errors.New("checksum mismatch (truncated or corrupted file)")
	}
	r := bytes.NewReader(body[len(checkpointMagic):])
	read := func(v any) error { return binary.Read(r, binary.LittleEndian, v) }
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
	if int64(stateLen) > int64(r.Len()) {
		return nil, nil, fmt.Errorf("policy state of %d bytes, only %d left", stateLen, r.Len())
	}
	state := make([]byte, stateLen)
	read(state)
	// rows, ids, labels, steps (and uses, fresh from version 2): 4z + 8 +
	// 4 + 8 (+ 16) bytes per row.
	perRow := 4*int64(z) + 20
	if version >= 2 {
		perRow += 16
	}
	if want := int64(n) * perRow; int64(r.Len()) != want {
		return nil, nil, fmt.Errorf("%d bytes of rows, expected %d for %d rows of %d", r.Len(), want, n, z)
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
	m := &Memory{k: k, z: z, policy: policy, safe: safe, maxAge: int(maxAge), seen: seen, gen: 1,
		rows: make([]float32, n*z), ids: make([]int64, n), labels: make([]int32, n), steps: make([]int64, n),
		uses: make([]int64, n), fresh: make([]int64, n)}
	read(m.rows)
	read(m.ids)
	read(m.labels)
	read(m.steps)
	if version >= 2 {
		read(m.uses)
		read(m.fresh)
	} else {
		copy(m.fresh, m.steps)
	}
	for i := 0; i < n; i++ {
		var ss float64
		for _, v := range m.rows[i*z : (i+1)*z] {
			ss += float64(v) * float64(v)
		}
		if !(math.Abs(ss-1) < 1e-3) {
			return nil, nil, fmt.Errorf("row %d has squared norm %v, expected 1 (rows are L2-normalised)", i, ss)
		}
		if m.labels[i] < -1 {
			return nil, nil, fmt.Errorf("row %d has label %d, expected -1 (unknown) or a class >= 0", i, m.labels[i])
		}
		if m.uses[i] < 0 {
			return nil, nil, fmt.Errorf("row %d was used %d times as a negative, expected >= 0", i, m.uses[i])
		}
		if m.fresh[i] < m.steps[i] {
			return nil, nil, fmt.Errorf("row %d was embedded at step %d, before it entered at step %d", i, m.fresh[i], m.steps[i])
		}
	}
	return m, state, nil
}
