package memory

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/kernels/igemm"
)

// TestApplyInPlace: apply moves the survivors within the rows, on one or
// several cores, to where a copy into fresh rows puts them, whatever the
// evictions (spread, bunched at the start or the end, all of one span).
func TestApplyInPlace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(3, 4))
	const z = 3
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, tc := range []struct {
			k, b int
			pick func(k, b int) []int // the evicted positions among k+b
		}{
			{5, 2, nil},
			{200, 16, nil},
			{1000, 64, nil},
			{1000, 300, nil},
			{640, 64, func(k, b int) []int { return seq(0, b) }},   // FIFO: a shift by b
			{640, 64, func(k, b int) []int { return seq(k-b, k) }}, // the last rows held
			{640, 64, func(k, b int) []int { return seq(k, k+b) }}, // the batch refused
			{640, 64, func(k, b int) []int { return append(seq(100, 130), seq(600, 634)...) }},
			{4096, 256, func(k, b int) []int { return seq(2047, 2047+256) }}, // across the middle
		} {
			var ev []int
			if tc.pick != nil {
				ev = tc.pick(tc.k, tc.b)
			} else {
				ev = rng.Perm(tc.k + tc.b)[:tc.b]
			}
			m := &Memory{k: tc.k, z: z}
			m.rows = make([]float32, tc.k*z)
			for i := range m.rows {
				m.rows[i] = float32(i)
			}
			for i := 0; i < tc.k; i++ {
				m.ids = append(m.ids, int64(i))
				m.labels = append(m.labels, int32(i))
				m.steps = append(m.steps, 0)
				m.uses = append(m.uses, int64(i))
				m.fresh = append(m.fresh, 0)
			}
			skip := 1
			m.batch = make([]float32, (skip+tc.b)*z)
			for i := range m.batch {
				m.batch[i] = -float32(i)
			}
			keep := keptPositions(ev, tc.k)
			want := make([]float32, 0, tc.k*z)
			for _, p := range keep {
				if p < tc.k {
					want = append(want, m.rows[p*z:(p+1)*z]...)
				} else {
					q := skip + p - tc.k
					want = append(want, m.batch[q*z:(q+1)*z]...)
				}
			}
			m.apply(keep, skip, func(r int) (int64, int32) { return int64(-r), -1 }, 1)
			if !slices.Equal(m.rows, want) {
				t.Fatalf("GOMAXPROCS %d, k %d, b %d, evictions %v: rows differ from the copy", procs, tc.k, tc.b, ev)
			}
			for j, p := range keep {
				if p >= tc.k && m.ids[j] != -int64(skip+p-tc.k) || p < tc.k && m.ids[j] != int64(p) {
					t.Fatalf("GOMAXPROCS %d, k %d: id %d at %d, from position %d", procs, tc.k, m.ids[j], j, p)
				}
			}
		}
	}
}

func seq(a, b int) []int {
	s := make([]int, 0, b-a)
	for i := a; i < b; i++ {
		s = append(s, i)
	}
	return s
}

// TestFillReservesOnce: filling a memory batch by batch allocates its rows
// once, at their full size, and a large batch taken whole is normalised
// into them without a scratch copy, its similarities (Usage) read there
// as from the scratch.
func TestFillReservesOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k, z = 1000, 8
	m, err := New(k, z, NewFIFO())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(unitRows(rng, 16, z), nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	first := &m.rows[:1][0]
	if cap(m.rows) != k*z || cap(m.ids) != k || cap(m.fresh) != k {
		t.Fatalf("capacities %d, %d, %d after the first add, expected %d, %d, %d", cap(m.rows), cap(m.ids), cap(m.fresh), k*z, k, k)
	}
	for s := 1; m.Len() < k; s++ {
		if _, err := m.Add(unitRows(rng, 16, z), nil, nil, s); err != nil {
			t.Fatal(err)
		}
		if &m.rows[:1][0] != first {
			t.Fatalf("step %d: the rows were reallocated while filling", s)
		}
	}

	// A batch of directValues values taken whole, against the same rows
	// added through the scratch a quarter at a time.
	const zl = 4096
	b := directValues / zl
	big := unitRows(rng, 2*b, zl)
	direct, _ := New(3*b, zl, NewFIFO())
	scratch, _ := New(3*b, zl, NewFIFO())
	for _, mm := range []*Memory{direct, scratch} {
		if _, err := mm.Add(big[:b*zl], nil, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := direct.Add(big[b*zl:], nil, nil, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < b; i += b / 4 {
		if _, err := scratch.Add(big[(b+i)*zl:(b+i+b/4)*zl], nil, nil, 1); err != nil {
			t.Fatal(err)
		}
	}
	if direct.batch != nil || !direct.batchInRows {
		t.Fatalf("the large batch went through the scratch (%d values)", len(direct.batch))
	}
	if !slices.Equal(direct.rows, scratch.rows) || !slices.Equal(direct.ids, scratch.ids) {
		t.Fatal("the rows differ from those added through the scratch")
	}
	// The direct batch's similarities, against a memory whose scratch
	// holds the same batch.
	u := direct.Usage(1)
	ref, _ := New(3*b, zl, NewFIFO())
	if _, err := ref.Add(big[:b*zl], nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	ref.batch = grow(ref.batch, b*zl)
	if err := normalizeRows(ref.batch, big[b*zl:], zl); err != nil {
		t.Fatal(err)
	}
	ref.reserve()
	n0 := len(ref.rows)
	ref.rows = append(ref.rows, ref.batch...)
	for i := 0; i < b; i++ {
		ref.ids, ref.labels, ref.steps = append(ref.ids, int64(b+i)), append(ref.labels, -1), append(ref.steps, 1)
		ref.uses, ref.fresh = append(ref.uses, 0), append(ref.fresh, 1)
	}
	ref.lastB, ref.lastStep, ref.batchInRows = b, 1, false
	if !slices.Equal(ref.rows[n0:], direct.rows[n0:]) {
		t.Fatal("reference rows differ")
	}
	if w := ref.Usage(1); w.BatchCos != u.BatchCos || w.WithinCos != u.WithinCos {
		t.Errorf("similarities %v, %v from the rows, %v, %v from the scratch", u.BatchCos, u.WithinCos, w.BatchCos, w.WithinCos)
	}
	if u.BatchCos != u.BatchCos {
		t.Error("no batch similarity after a direct add")
	}
	// Once the rows change, the batch is gone: no similarity.
	if err := direct.Refresh([]int{0}, unitRows(rng, 1, zl), 1); err != nil {
		t.Fatal(err)
	}
	if u := direct.Usage(1); u.BatchCos == u.BatchCos {
		t.Error("a batch similarity from rows that changed")
	}
}

// TestCheckpointBytes: MarshalBinary's exact-size buffer holds what
// binary.Write into a growing buffer wrote.
func TestCheckpointBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, pol := range []Policy{NewDUEL(Compete), NewFIFO()} {
		m, err := New(50, 6, pol, WithMaxAge(9), WithSafeUpdate(true))
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 6; s++ {
			if _, err := m.Add(unitRows(rng, 16, 6), nil, nil, s); err != nil {
				t.Fatal(err)
			}
		}
		got, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var state []byte
		if pol.Name() == "duel" {
			state = []byte{byte(Compete)}
		}
		var buf bytes.Buffer
		w := func(v any) { binary.Write(&buf, binary.LittleEndian, v) }
		buf.WriteString(checkpointMagic)
		w(uint32(checkpointVersion))
		w([]uint32{uint32(m.k), uint32(m.z), uint32(m.Len())})
		w(m.seen)
		w(m.safe)
		w(uint32(m.maxAge))
		w(uint16(len(pol.Name())))
		buf.WriteString(pol.Name())
		w(uint32(len(state)))
		buf.Write(state)
		w(m.rows)
		w(m.ids)
		w(m.labels)
		w(m.steps)
		w(m.uses)
		w(m.fresh)
		w(crc32.ChecksumIEEE(buf.Bytes()))
		if !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("%s: %d bytes, expected binary.Write's %d", pol.Name(), len(got), buf.Len())
		}
		if cap(got) != len(got) {
			t.Errorf("%s: a buffer of %d bytes for %d", pol.Name(), cap(got), len(got))
		}
	}
}

// TestDUELHostBytes: the estimate of the DUEL policy's host memory counts
// its K x K block while it fits MaxBlockBytes, a panel of 256 x K dots
// beyond, the reference's (K+B) x (K+B) dots for the other admissions,
// and it is a close lower bound of what a policy holds after its updates.
func TestDUELHostBytes(t *testing.T) {
	d := NewDUEL(Protected)
	for _, k := range []int{4096, 8192} {
		if got, block := d.HostBytes(k, 64, 16), 4*float64(k)*float64(k); got < block || got > 1.2*block {
			t.Errorf("HostBytes(%d, 64, 16) = %g, expected the block of %g and a little", k, got, block)
		}
	}
	if got := d.HostBytes(8193, 64, 16); got < 4*256*8193 || got > 4*8192*8192/4 {
		t.Errorf("HostBytes(8193, 64, 16) = %g, expected a panel of 256 x K dots and the slots' rows", got)
	}
	if got, want := NewDUEL(InsertFirst).HostBytes(1000, 8, 24), 4*1024.0*1024+4*1024*8; got != want {
		t.Errorf("reference HostBytes = %g, expected %g", got, want)
	}

	const k, z, b = 2048, 128, 64
	rng := rand.New(rand.NewPCG(9, 9))
	rows := unitRows(rng, k+8*b, z)
	m, err := New(k, z, NewDUEL(Protected))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(rows[:k*z], nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 8; s++ {
		if _, err := m.Add(rows[(k+s*b)*z:(k+(s+1)*b)*z], nil, nil, s+1); err != nil {
			t.Fatal(err)
		}
	}
	f := &m.policy.(*DUEL).fast
	f.settle()
	// What the policy's slices hold (the heap's statistics would count
	// what other tests free meanwhile).
	grid := func(g *gridSet) int { // its rows, and their packing in panels of igemm.NR
		n := (g.packed.Rows() + igemm.NR - 1) / igemm.NR * igemm.NR
		return 2*cap(g.rows) + 4*n*((g.z+1)/2)
	}
	held := grid(&f.slots) + grid(&f.grids[0]) + grid(&f.grids[1]) + 8*(cap(f.score)+cap(f.key)+cap(f.order)+cap(f.rank)+cap(f.slotOf)) +
		cap(f.selected) + 4*(cap(f.rowJ)+cap(f.dots)+cap(f.colJ))
	if cr := f.carried; cr != nil {
		held += 4 * (cap(cr.block) + cap(cr.ring) + cap(cr.stamp) + cap(cr.sync) + cap(cr.idx))
	}
	est := d.HostBytes(k, z, b)
	if live := float64(held); live < est || live > 1.05*est {
		t.Errorf("the policy holds %.0f bytes, estimated %.0f", live, est)
	}
}
