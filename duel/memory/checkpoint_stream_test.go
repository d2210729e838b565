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
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// legacyMarshal is MarshalBinary as it was before WriteTo (one buffer of
// the checkpoint's size, encoded whole): the reference of its bytes.
func legacyMarshal(m *Memory) ([]byte, error) {
	var state []byte
	if bm, ok := m.policy.(encoding.BinaryMarshaler); ok {
		var err error
		if state, err = bm.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	name := m.policy.Name()
	parts := []any{uint32(checkpointVersion), []uint32{uint32(m.k), uint32(m.z), uint32(m.Len())}, m.seen, m.safe,
		uint32(m.maxAge), uint16(len(name)), name, uint32(len(state)), state,
		m.rows, m.ids, m.labels, m.steps, m.uses, m.fresh}
	buf := []byte(checkpointMagic)
	for _, v := range parts {
		switch v := v.(type) {
		case string:
			buf = append(buf, v...)
		case []byte:
			buf = append(buf, v...)
		default:
			buf, _ = binary.Append(buf, binary.LittleEndian, v)
		}
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.ChecksumIEEE(buf)), nil
}

// legacyDecode is the decoder as it was before ReadCheckpoint (the whole
// checkpoint in memory, its checksum checked first): the reference of its
// validation and errors. It returns UnmarshalBinary's error for data, or
// the memory decoded.
func legacyDecode(data []byte) (*Memory, error) {
	m, _, err := legacyDecodeCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("memory checkpoint: %w", err)
	}
	return m, nil
}

func legacyDecodeCheckpoint(data []byte) (*Memory, []byte, error) {
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

// sameMemory reports how a and b (decoded memories) differ, "" if not.
func sameMemory(a, b *Memory) string {
	switch {
	case a.k != b.k || a.z != b.z || a.seen != b.seen || a.safe != b.safe || a.maxAge != b.maxAge:
		return fmt.Sprintf("header k %d/%d z %d/%d seen %d/%d safe %v/%v max age %d/%d", a.k, b.k, a.z, b.z, a.seen, b.seen, a.safe, b.safe, a.maxAge, b.maxAge)
	case a.policy.Name() != b.policy.Name():
		return "policy " + a.policy.Name() + " / " + b.policy.Name()
	case !slices.Equal(math32bits(a.rows), math32bits(b.rows)):
		return "rows"
	case !slices.Equal(a.ids, b.ids) || !slices.Equal(a.labels, b.labels) || !slices.Equal(a.steps, b.steps) ||
		!slices.Equal(a.uses, b.uses) || !slices.Equal(a.fresh, b.fresh):
		return "metadata"
	}
	ab, _ := legacyMarshal(a)
	bb, _ := legacyMarshal(b)
	if !bytes.Equal(ab, bb) {
		return "policy state"
	}
	return ""
}

func math32bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

// checkpointMemories returns memories of every policy, with their state
// after several updates: partly full, full after evictions (DUEL's
// carried block built), with a maximum age, the safe update, labels and
// counted negatives, the largest spanning several 64 KiB pieces.
func checkpointMemories(t testing.TB) map[string]*Memory {
	t.Helper()
	out := map[string]*Memory{}
	for _, name := range PolicyNames() {
		for _, tc := range []struct {
			k, z, b, adds int
			opts          []Option
		}{
			{6, 3, 4, 0, nil}, // empty
			{6, 3, 4, 1, nil},
			{50, 6, 16, 6, []Option{WithMaxAge(9), WithSafeUpdate(true)}},
			{2000, 24, 64, 40, nil},
		} {
			rng := rand.New(rand.NewPCG(uint64(tc.k), 3))
			p, err := NewPolicy(name, 11)
			if err != nil {
				t.Fatal(err)
			}
			k := tc.k
			m, err := New(k, tc.z, p, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			labels := make([]int32, tc.b)
			for i := range labels {
				labels[i] = int32(i%5) - 1
			}
			for s := 0; s < tc.adds; s++ {
				if _, err := m.Add(unitRows(rng, tc.b, tc.z), nil, labels, s); err != nil {
					t.Fatal(err)
				}
				m.CountNegatives([]int{0, m.Len() - 1})
			}
			out[fmt.Sprintf("%s k=%d z=%d after %d adds", name, k, tc.z, tc.adds)] = m
		}
	}
	return out
}

// pieceWriter records the sizes of the writes it is given.
type pieceWriter struct {
	bytes.Buffer
	sizes []int
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

// TestWriteToBytes: WriteTo writes, in pieces of at most 64 KiB, the bytes
// the encoder wrote whole before it (legacyMarshal), as MarshalBinary does
// into a buffer of their exact size, for memories of every policy,
// without touching the memory: a DUEL memory whose carried block is built
// continues as one that was not written.
func TestWriteToBytes(t *testing.T) {
	for name, m := range checkpointMemories(t) {
		want, err := legacyMarshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var w pieceWriter
		n, err := m.WriteTo(&w)
		if err != nil || n != int64(len(want)) || !bytes.Equal(w.Bytes(), want) {
			t.Errorf("%s: WriteTo wrote %d bytes (%v), expected the %d of the encoder whole: equal %v", name, n, err, len(want), bytes.Equal(w.Bytes(), want))
		}
		if len(want) > 2*checkpointChunk && len(w.sizes) < 3 {
			t.Errorf("%s: %d bytes in %d writes, expected pieces", name, len(want), len(w.sizes))
		}
		for _, s := range w.sizes {
			if s > checkpointChunk {
				t.Errorf("%s: a write of %d bytes, expected at most %d", name, s, checkpointChunk)
			}
		}
		got, err := m.MarshalBinary()
		if err != nil || !bytes.Equal(got, want) || cap(got) != len(got) {
			t.Errorf("%s: MarshalBinary %d bytes (cap %d, %v), expected the %d of the encoder whole", name, len(got), cap(got), err, len(want))
		}
	}
	// Writing a checkpoint between updates changes nothing of what follows
	// (the policies' carried state and generators included).
	for _, name := range PolicyNames() {
		var ms [2]*Memory
		rng := [2]*rand.Rand{rand.New(rand.NewPCG(4, 4)), rand.New(rand.NewPCG(4, 4))}
		for i := range ms {
			p, _ := NewPolicy(name, 5)
			ms[i], _ = New(64, 8, p)
		}
		for s := 0; s < 12; s++ {
			for i, m := range ms {
				if _, err := m.Add(unitRows(rng[i], 16, 8), nil, nil, s); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := ms[0].WriteTo(io.Discard); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(ms[0].IDs(), ms[1].IDs()) || !slices.Equal(ms[0].Rows(), ms[1].Rows()) {
			t.Errorf("%s: writing checkpoints changed the updates", name)
		}
	}
}

// failingWriter accepts n bytes, then fails.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestWriteToErrors: a writer's error is WriteTo's, with the bytes it
// took, and stops the writes.
func TestWriteToErrors(t *testing.T) {
	m := checkpointMemories(t)["fifo k=2000 z=24 after 40 adds"]
	for _, after := range []int{0, 10, checkpointChunk + 3} {
		w := &failingWriter{n: after}
		n, err := m.WriteTo(w)
		if !errors.Is(err, errDiskFull) || n != int64(after) {
			t.Errorf("a writer failing after %d bytes: WriteTo %d, %v", after, n, err)
		}
	}
}

// readVia decodes data with ReadCheckpoint through wrap of its reader, and
// returns the memory read, or nil and the error's text.
func readVia(data []byte, wrap func(io.Reader) io.Reader) (*Memory, string) {
	var m Memory
	if err := m.ReadCheckpoint(wrap(bytes.NewReader(data)), int64(len(data))); err != nil {
		return nil, err.Error()
	}
	return &m, ""
}

// sameDecoding reports how ReadCheckpoint (through readers giving half of
// each request and, for up to 16 KiB, every byte apart) and UnmarshalBinary
// decode data
// differently from the whole-buffer decoder before them, "" if they agree.
func sameDecoding(data []byte) string {
	want, err := legacyDecode(data)
	wantErr := ""
	if err != nil {
		wantErr = err.Error()
	}
	var um Memory
	uerr := ""
	if err := um.UnmarshalBinary(data); err != nil {
		uerr = err.Error()
	}
	got := map[string]*Memory{"UnmarshalBinary": &um}
	errs := map[string]string{"UnmarshalBinary": uerr}
	hows := []string{"UnmarshalBinary", "half"}
	got["half"], errs["half"] = readVia(data, iotest.HalfReader)
	if len(data) <= 1<<14 {
		hows = append(hows, "one byte")
		got["one byte"], errs["one byte"] = readVia(data, iotest.OneByteReader)
	}
	for _, how := range hows {
		if errs[how] != wantErr {
			return fmt.Sprintf("%s: error %q, expected %q", how, errs[how], wantErr)
		}
		if wantErr == "" {
			if d := sameMemory(got[how], want); d != "" {
				return fmt.Sprintf("%s: decoded another memory (%s)", how, d)
			}
		}
	}
	return ""
}

// TestReadCheckpointAsBefore: ReadCheckpoint and UnmarshalBinary accept
// what the whole-buffer decoder accepted, and refuse the rest with its
// errors: every truncation, every byte corrupted (the checksum fixed up
// or not), the header's fields out of range.
func TestReadCheckpointAsBefore(t *testing.T) {
	for name, m := range checkpointMemories(t) {
		data, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if d := sameDecoding(data); d != "" {
			t.Fatalf("%s: %s", name, d)
		}
		// Every byte of the header and the policy's state, then some of
		// the rows.
		step := func(i int) int {
			if i < 128 {
				return 1
			}
			return len(data)/24 + 1
		}
		for cut := 0; cut < len(data); cut += step(cut) {
			if d := sameDecoding(data[:cut]); d != "" {
				t.Fatalf("%s cut at %d of %d bytes: %s", name, cut, len(data), d)
			}
		}
		for i := 0; i < len(data); i += step(i) {
			bad := bytes.Clone(data)
			bad[i] ^= 0x41
			if d := sameDecoding(bad); d != "" {
				t.Fatalf("%s, byte %d corrupted: %s", name, i, d)
			}
			// The same, with a checksum that matches: the parser's errors.
			if i < len(data)-4 {
				binary.LittleEndian.PutUint32(bad[len(bad)-4:], crc32.ChecksumIEEE(bad[:len(bad)-4]))
				if d := sameDecoding(bad); d != "" {
					t.Fatalf("%s, byte %d corrupted, checksum fixed: %s", name, i, d)
				}
			}
		}
		// Trailing bytes, with the checksum over them.
		long := append(bytes.Clone(data[:len(data)-4]), 1, 2, 3)
		long = binary.LittleEndian.AppendUint32(long, crc32.ChecksumIEEE(long))
		if d := sameDecoding(long); d != "" {
			t.Fatalf("%s with trailing bytes: %s", name, d)
		}
	}
}

// failingReader reads data, then fails.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestReadCheckpointReaderErrors: a reader that fails or ends before the
// size given is an error that says so (wrapping the reader's), ahead of
// what the bytes read say, and leaves the memory unchanged.
func TestReadCheckpointReaderErrors(t *testing.T) {
	m := checkpointMemories(t)["reservoir k=2000 z=24 after 40 adds"]
	data, _ := m.MarshalBinary()
	cause := errors.New("input/output error")
	for _, at := range []int{0, 5, 40, checkpointChunk + 1, len(data) - 4, len(data) - 1} {
		p, _ := NewPolicy("fifo", 1)
		dst, _ := New(10, 3, p)
		before, _ := dst.MarshalBinary()
		err := dst.ReadCheckpoint(&failingReader{data: data[:at], err: cause}, int64(len(data)))
		if !errors.Is(err, cause) || !strings.HasPrefix(err.Error(), "memory checkpoint: reading: ") {
			t.Errorf("a reader failing after %d bytes: %v", at, err)
		}
		want := fmt.Sprintf("memory checkpoint: the input ended after %d of its %d bytes", at, len(data))
		if err := dst.ReadCheckpoint(bytes.NewReader(data[:at]), int64(len(data))); err == nil || err.Error() != want {
			t.Errorf("an input of %d bytes for %d: %v, expected %q", at, len(data), err, want)
		}
		if after, _ := dst.MarshalBinary(); !bytes.Equal(after, before) {
			t.Errorf("a failed read after %d bytes changed the memory", at)
		}
	}
	// Bytes past the size given are not read.
	var back Memory
	if err := back.ReadCheckpoint(io.MultiReader(bytes.NewReader(data), &failingReader{err: cause}), int64(len(data))); err != nil {
		t.Errorf("a reader failing past the checkpoint: %v", err)
	}
}

// TestCheckpointStreamAllocs: writing a checkpoint allocates no copy of
// the memory, and reading one allocates the memory read and no more (the
// decoder before them held the file's bytes and an encoded copy of each
// slice besides).
func TestCheckpointStreamAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	m, err := New(20000, 64, NewFIFO())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(unitRows(rng, 20000, 64), nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	data, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	allocated := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	if got := allocated(func() {
		if _, err := m.WriteTo(io.Discard); err != nil {
			t.Fatal(err)
		}
	}); got > 2*checkpointChunk {
		t.Errorf("WriteTo of a %d-byte checkpoint allocated %d bytes, expected at most %d", len(data), got, 2*checkpointChunk)
	}
	var back Memory
	if got := allocated(func() {
		if err := back.ReadCheckpoint(bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}); got > uint64(len(data))+2*checkpointChunk {
		t.Errorf("ReadCheckpoint of a %d-byte checkpoint allocated %d bytes, expected the memory's and at most %d more", len(data), got, 2*checkpointChunk)
	}
	if d := sameMemory(&back, m); d != "" {
		t.Errorf("read back another memory: %s", d)
	}
}

// TestReadCheckpointReservesRows: a memory read partly full (K/2 rows)
// into one made for its sizes, as a resumed run's is, has the capacity of
// a full memory, as a fresh one has from its first fill: the first Add
// after it appends where the rows are (growing them would hold the rows
// read and their copy of K rows at once), and the memory then decides and
// writes what the memory that was written does. A memory made for other
// sizes, or none, gets the rows read only: the header's K is not trusted
// for an allocation before the checksum is checked.
func TestReadCheckpointReservesRows(t *testing.T) {
	const k, z, b = 2000, 24, 50
	for _, name := range PolicyNames() {
		rng := rand.New(rand.NewPCG(5, 8))
		p, _ := NewPolicy(name, 11)
		m, err := New(k, z, p)
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < k/2/b; s++ {
			if _, err := m.Add(unitRows(rng, b, z), nil, nil, s); err != nil {
				t.Fatal(err)
			}
		}
		data, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		caps := func(m *Memory) []int {
			return []int{cap(m.rows) / z, cap(m.ids), cap(m.labels), cap(m.steps), cap(m.uses), cap(m.fresh)}
		}
		for _, tc := range []struct {
			what string
			k, z int
			want int // capacity in rows
		}{
			{"made for its sizes", k, z, k},
			{"made for another K", k + 1, z, m.Len()},
			{"made for another Z", k, z + 1, m.Len()},
			{"not made", 0, 0, m.Len()},
		} {
			back := &Memory{}
			if tc.k > 0 {
				q, _ := NewPolicy(name, 11)
				if back, err = New(tc.k, tc.z, q); err != nil {
					t.Fatal(err)
				}
			}
			if err := back.UnmarshalBinary(data); err != nil {
				t.Fatalf("%s, %s: %v", name, tc.what, err)
			}
			if got := caps(back); slices.Max(got) != tc.want || slices.Min(got) != tc.want {
				t.Errorf("%s, %s: capacities (rows, ids, labels, steps, uses, fresh) %v rows after reading %d of %d, expected %d",
					name, tc.what, got, back.Len(), k, tc.want)
			}
			if tc.want != k {
				continue
			}
			// The first Add fills where the rows are; the memory then
			// goes on as the one written, through its evictions.
			at := &back.rows[0]
			add := unitRows(rng, b, z)
			for i, mm := range []*Memory{m, back} {
				if _, err := mm.Add(add, nil, nil, k/2/b); err != nil {
					t.Fatal(err)
				}
				if i == 1 && &back.rows[0] != at {
					t.Errorf("%s: the first Add after reading the memory moved its rows", name)
				}
			}
			for s := k/2/b + 1; s < 2*k/b; s++ {
				add := unitRows(rng, b, z)
				for _, mm := range []*Memory{m, back} {
					if _, err := mm.Add(add, nil, nil, s); err != nil {
						t.Fatal(err)
					}
				}
			}
			want, _ := m.MarshalBinary()
			got, _ := back.MarshalBinary()
			if !bytes.Equal(got, want) {
				t.Errorf("%s: the memory read went on otherwise than the one written", name)
			}
		}
	}
}

// TestResumeFirstAddAllocs: reading a checkpoint of a memory half full
// into one made for its sizes, then its first Add, allocate the full
// memory once and the batch's scratch (before the memory read reserved
// its capacity, the first Add allocated it again: the rows read and their
// copy, 1.5 times the memory, were live at once).
func TestResumeFirstAddAllocs(t *testing.T) {
	const k, z, b = 20000, 64, 256
	rng := rand.New(rand.NewPCG(9, 10))
	m, err := New(k, z, NewFIFO())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(unitRows(rng, k/2, z), nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	data, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	add := unitRows(rng, b, z)
	back, err := New(k, z, NewFIFO())
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := back.ReadCheckpoint(bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if _, err := back.Add(add, nil, nil, 1); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	full := uint64(k * (4*z + 36)) // rows; ids, steps, uses, fresh (int64), labels (int32)
	limit := full + 4*b*z + 2*checkpointChunk
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("reading %d of %d rows of %d and the first Add of %d: %d bytes allocated (the full memory: %d)", k/2, k, z, b, got, full)
	if got > limit {
		t.Errorf("reading a checkpoint of %d of %d rows and the first Add allocated %d bytes, expected the full memory's %d and at most %d more",
			k/2, k, got, full, limit-full)
	}
}
