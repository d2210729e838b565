package memory

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// unitRows returns n random rows of z values.
func unitRows(rng *rand.Rand, n, z int) []float32 {
	v := make([]float32, n*z)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func TestFillThenPolicy(t *testing.T) {
	m, err := New(5, 2, NewFIFO())
	if err != nil {
		t.Fatal(err)
	}
	rows := func(ids ...int64) []float32 {
		var v []float32
		for _, id := range ids {
			v = append(v, float32(id+1), 1)
		}
		return v
	}
	st, err := m.Add(rows(0, 1, 2), []int64{0, 1, 2}, nil, 1)
	if err != nil || st.Filled != 3 || st.Entered != 0 || m.Len() != 3 {
		t.Fatalf("first add: %+v %v, len %d", st, err, m.Len())
	}
	// Overflow: 2 rows fill, 2 go through FIFO (evicting 0 and 1).
	st, err = m.Add(rows(3, 4, 5, 6), []int64{3, 4, 5, 6}, []int32{1, 2, 3, 4}, 2)
	if err != nil || st.Filled != 2 || st.Entered != 2 || st.Evicted != 2 {
		t.Fatalf("second add: %+v %v", st, err)
	}
	if got := m.IDs(); !slices.Equal(got, []int64{2, 3, 4, 5, 6}) {
		t.Fatalf("ids %v, want [2 3 4 5 6]", got)
	}
	if got := m.Labels(); !slices.Equal(got, []int32{-1, 1, 2, 3, 4}) {
		t.Fatalf("labels %v", got)
	}
	if got := m.Steps(); !slices.Equal(got, []int64{1, 2, 2, 2, 2}) {
		t.Fatalf("steps %v", got)
	}
	for r := 0; r < m.Len(); r++ {
		x, y := m.Rows()[2*r], m.Rows()[2*r+1]
		if math.Abs(float64(x*x+y*y)-1) > 1e-6 {
			t.Fatalf("row %d not normalised: %v %v", r, x, y)
		}
	}
	if m.Seen() != 7 {
		t.Fatalf("seen %d, want 7", m.Seen())
	}
}

func TestAddErrors(t *testing.T) {
	m, _ := New(4, 3, NewFIFO())
	for _, c := range []struct {
		name   string
		rows   []float32
		ids    []int64
		labels []int32
		want   string
	}{
		{"ragged", []float32{1, 2}, nil, nil, "multiple of the row length 3"},
		{"ids", []float32{1, 2, 3}, []int64{1, 2}, nil, "2 ids for 1 rows"},
		{"labels", []float32{1, 2, 3}, nil, []int32{1, 2}, "2 labels for 1 rows"},
		{"zero", []float32{1, 2, 3, 0, 0, 0}, nil, nil, "row 1: all zeros"},
		{"nan", []float32{float32(math.NaN()), 2, 3}, nil, nil, "row 0: not finite"},
		{"inf", []float32{float32(math.Inf(1)), 2, 3}, nil, nil, "row 0: not finite"},
	} {
		if _, err := m.Add(c.rows, c.ids, c.labels, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", c.name, err, c.want)
		}
	}
	if m.Len() != 0 {
		t.Fatalf("a failed add changed the memory: len %d", m.Len())
	}
	for _, c := range []struct{ k, z int }{{0, 3}, {3, 0}, {-1, 2}} {
		if _, err := New(c.k, c.z, NewFIFO()); err == nil {
			t.Errorf("New(%d, %d) accepted", c.k, c.z)
		}
	}
	if _, err := New(3, 3, nil); err == nil {
		t.Error("New without a policy accepted")
	}
	var zero Memory
	if _, err := zero.Add([]float32{1}, nil, nil, 0); err == nil {
		t.Error("Add on a zero Memory accepted")
	}
}

func TestPolicies(t *testing.T) {
	k, z := 8, 4
	for _, name := range PolicyNames() {
		t.Run(name, func(t *testing.T) {
			run := func() []int64 {
				p, err := NewPolicy(name, 42)
				if err != nil {
					t.Fatal(err)
				}
				m, _ := New(k, z, p)
				rng := rand.New(rand.NewPCG(3, 4))
				for s := 0; s < 20; s++ {
					if _, err := m.Add(unitRows(rng, 5, z), nil, nil, s); err != nil {
						t.Fatal(err)
					}
					if m.Len() != min(k, 5*(s+1)) {
						t.Fatalf("len %d after %d adds", m.Len(), s+1)
					}
				}
				return slices.Clone(m.IDs())
			}
			a, b := run(), run()
			if !slices.Equal(a, b) {
				t.Fatalf("not deterministic for a seed: %v vs %v", a, b)
			}
			if name == "fifo" && !slices.Equal(a, []int64{92, 93, 94, 95, 96, 97, 98, 99}) {
				t.Fatalf("fifo kept %v, want the last 8 rows", a)
			}
			if !slices.IsSorted(a) {
				t.Fatalf("ids %v: the memory order is not the arrival order", a)
			}
		})
	}
	if _, err := NewPolicy("lru", 0); err == nil || !strings.Contains(err.Error(), strings.Join(PolicyNames(), ", ")) {
		t.Fatalf("unknown policy error %v", err)
	}
}

// TestReservoirUniform checks that reservoir sampling keeps each stream row
// with probability K/N.
func TestReservoirUniform(t *testing.T) {
	const k, n, trials = 10, 100, 2000
	hits := make([]int, n)
	for s := 0; s < trials; s++ {
		m, _ := New(k, 1, NewReservoir(uint64(s)))
		for i := 0; i < n; i += 7 {
			b := min(7, n-i)
			rows := make([]float32, b)
			for j := range rows {
				rows[j] = 1
			}
			if _, err := m.Add(rows, nil, nil, 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range m.IDs() {
			hits[id]++
		}
	}
	want := float64(trials) * k / n // 200, sd ~13
	for id, h := range hits {
		if math.Abs(float64(h)-want) > 5*math.Sqrt(want) {
			t.Fatalf("row %d kept %d times in %d trials, want ~%v", id, h, trials, want)
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	for _, name := range PolicyNames() {
		rng := rand.New(rand.NewPCG(5, 6))
		p, _ := NewPolicy(name, 9)
		m, _ := New(6, 3, p, WithSafeUpdate(name == "duel"))
		labels := []int32{0, 1, 2, 1}
		for s := 0; s < 4; s++ {
			if _, err := m.Add(unitRows(rng, 4, 3), nil, labels, s); err != nil {
				t.Fatal(err)
			}
		}
		data, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back Memory
		if err := back.UnmarshalBinary(data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(back.Rows(), m.Rows()) || !slices.Equal(back.IDs(), m.IDs()) ||
			!slices.Equal(back.Labels(), m.Labels()) || !slices.Equal(back.Steps(), m.Steps()) ||
			back.Seen() != m.Seen() || back.safe != m.safe || back.Policy().Name() != name {
			t.Fatalf("%s: round trip changed the memory", name)
		}
		// Both continue identically (same RNG state, same policy).
		more := unitRows(rng, 4, 3)
		if _, err := m.Add(more, nil, nil, 9); err != nil {
			t.Fatal(err)
		}
		if _, err := back.Add(more, nil, nil, 9); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.IDs(), m.IDs()) {
			t.Fatalf("%s: after reload the memories diverge: %v vs %v", name, back.IDs(), m.IDs())
		}
		// Every truncation and every single-byte corruption is an error.
		for cut := 0; cut < len(data); cut += 7 {
			if err := back.UnmarshalBinary(data[:cut]); err == nil {
				t.Fatalf("%s: truncated checkpoint (%d of %d bytes) accepted", name, cut, len(data))
			}
		}
		bad := bytes.Clone(data)
		bad[len(bad)/2] ^= 0x40
		if err := back.UnmarshalBinary(bad); err == nil {
			t.Fatalf("%s: corrupted checkpoint accepted", name)
		}
	}
}

func FuzzUnmarshalCheckpoint(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, name := range PolicyNames() {
		p, _ := NewPolicy(name, 1)
		m, _ := New(3, 2, p)
		m.Add(unitRows(rng, 4, 2), nil, []int32{0, 1, 0, 1}, 0)
		data, _ := m.MarshalBinary()
		f.Add(data[:len(data)-4])
	}
	f.Add([]byte("DUELMEM\x00"))
	// The input is a checkpoint without its checksum, which the target
	// appends, so that mutations reach the parser behind it. UnmarshalBinary
	// and ReadCheckpoint (streaming, through readers of a byte and of half
	// a request) decode it as the whole-buffer decoder before them did
	// (legacyDecode): the same memory, or the same error.
	f.Fuzz(func(t *testing.T, body []byte) {
		data := binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.ChecksumIEEE(body))
		if d := sameDecoding(data); d != "" {
			t.Fatal(d)
		}
		if d := sameDecoding(body); d != "" { // no checksum: the parse behind a mismatch
			t.Fatal(d)
		}
		var m Memory
		if err := m.UnmarshalBinary(data); err != nil {
			return
		}
		// A checkpoint that loads is a usable memory.
		if m.Len() > m.Size() || len(m.Rows()) != m.Len()*m.Dim() {
			t.Fatalf("inconsistent memory: len %d size %d rows %d", m.Len(), m.Size(), len(m.Rows()))
		}
		// A memory that fills reserves its K x Z rows at once: a header of
		// a few bytes asks for up to 2^28 x 2^20 values, whose reservation
		// (gigabytes at every input) the fuzzing process cannot hold.
		if int64(m.Size())*int64(m.Dim()+9) > 1<<24 {
			return
		}
		if _, err := m.Add(unitRows(rng, 2, m.Dim()), nil, nil, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSetRowsRebuilds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m, _ := New(4, 3, NewDUEL(Protected))
	m.Add(unitRows(rng, 6, 3), nil, nil, 0)
	if err := m.SetRows(make([]float32, 3)); err == nil {
		t.Fatal("SetRows with the wrong size accepted")
	}
	bad := unitRows(rng, 4, 3)
	bad[4], bad[5], bad[3] = 0, 0, 0
	if err := m.SetRows(bad); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Fatalf("SetRows with a zero row: %v", err)
	}
}

func TestSafeUpdate(t *testing.T) {
	// Memory: two classes (x and y axes), 3 rows each. A batch of x rows
	// through FIFO would evict y rows first: less distinctive, rejected.
	x, y := []float32{1, 0}, []float32{0, 1}
	rows := slices.Concat(y, y, y, x, x, x)
	m, _ := New(6, 2, NewFIFO(), WithSafeUpdate(true))
	m.Add(rows, nil, nil, 0)
	st, err := m.Add(slices.Concat(x, x), nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Rejected || st.InfoAfter >= st.InfoBefore || !slices.Equal(m.Rows(), rows) {
		t.Fatalf("unsafe update not rejected: %+v", st)
	}
	// The stream is mostly x; DUEL evicts x rows (memory x5 y1 -> x4 y2):
	// more distinctive, accepted.
	m, _ = New(6, 2, NewDUEL(Protected), WithSafeUpdate(true))
	m.Add(slices.Concat(x, x, x, x, x, y), nil, nil, 0)
	st, err = m.Add(slices.Concat(x, x, x, y), nil, nil, 1)
	if err != nil || st.Rejected || st.InfoAfter < st.InfoBefore || st.Entered != 4 {
		t.Fatalf("safe update rejected: %+v %v", st, err)
	}
}

func TestMetrics(t *testing.T) {
	x, y := []float32{1, 0}, []float32{0, 1}
	m, _ := New(4, 2, NewFIFO())
	m.Add(slices.Concat(x, x, x, y), nil, []int32{0, 0, 0, 1}, 0)
	counts, err := m.ClassCounts(3)
	if err != nil || !slices.Equal(counts, []int{3, 1, 0}) {
		t.Fatalf("counts %v %v", counts, err)
	}
	if _, err := m.ClassCounts(1); err == nil {
		t.Fatal("label beyond numClasses accepted")
	}
	want := -(0.75*math.Log(0.75) + 0.25*math.Log(0.25))
	if h := m.ClassEntropy(); math.Abs(h-want) > 1e-12 {
		t.Fatalf("entropy %v, want %v", h, want)
	}
	// q(x,x)=1, q(x,y)=1/2: the x rows have mean q (3+0.5)/4, y (1.5+1)/4.
	d := m.Distinctiveness()
	for i, w := range []float64{3.5, 3.5, 3.5, 2.5} {
		if math.Abs(d[i]+math.Log(w/4)) > 1e-6 {
			t.Fatalf("distinctiveness %v, want -log(%v/4) at %d", d, w, i)
		}
	}
}

// TestDistinctivenessMatchesDUEL checks that the row DUEL evicts first is
// the one with the least distinctiveness information (ties: lowest
// position), as Definition 3 says.
func TestDistinctivenessMatchesDUEL(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := 0; trial < 20; trial++ {
		k, z := 5+rng.IntN(40), 2+rng.IntN(10)
		m, _ := New(k, z, NewFIFO())
		m.Add(stream(rng, k, z), nil, nil, 0)
		d := m.Distinctiveness()
		want := 0
		for i, v := range d {
			if v < d[want] {
				want = i
			}
		}
		a := &Arrival{Memory: m.Rows(), Batch: unitRows(rng, 1, z), Z: z}
		if err := normalizeRows(a.Batch, a.Batch, z); err != nil {
			t.Fatal(err)
		}
		if got := duelReference(a, Protected); got[0] != want {
			t.Fatalf("trial %d: DUEL evicted %d, least distinctive is %d (%v)", trial, got[0], want, d)
		}
	}
}

// TestSafeCheckValues pins the safe update's estimate on ideal features
// (x and y orthogonal: q = 1 within a class, 1/2 across) against values
// worked out by hand. The batch (3 x, 1 y) is the sample of D_t. Before:
// memory x2 y2, every row has mean q 3/4. Under a stream that is mostly x,
// information grows when x rows leave: x1 y3 is safe, x3 y1 is not, and
// an update that leaves the classes as they were changes nothing.
func TestSafeCheckValues(t *testing.T) {
	x, y := []float32{1, 0}, []float32{0, 1}
	rows := slices.Concat(x, x, y, y)
	batch := slices.Concat(x, x, x, y)
	info := func(px, py float64) float64 { return -(0.75*math.Log(px) + 0.25*math.Log(py)) }
	before := -math.Log(0.75)
	for _, tc := range []struct {
		name string
		keep []int // rows held 0-3, then batch rows 4-7
		want float64
	}{
		{"x2 y2 (batch x replaces x)", []int{1, 2, 3, 4}, before},
		{"x3 y1", []int{0, 1, 2, 4}, info(3.5/4, 2.5/4)},
		{"x1 y3", []int{0, 2, 3, 7}, info(2.5/4, 3.5/4)},
	} {
		b, a := SafeCheck(rows, batch, 2, tc.keep)
		if math.Abs(b-before) > 1e-12 || math.Abs(a-tc.want) > 1e-12 {
			t.Errorf("%s: before %v after %v, want %v %v", tc.name, b, a, before, tc.want)
		}
	}
	if info(3.5/4, 2.5/4) >= before || info(2.5/4, 3.5/4) <= before {
		t.Fatal("hand values do not order as documented")
	}
}
