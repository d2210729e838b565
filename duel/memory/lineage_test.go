package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// lineageLog is FIFO that records the lineage of every arrival it sees.
type lineageLog struct {
	fifo Policy
	seen []Lineage
}

func (l *lineageLog) Name() string { return "lineage-log" }

func (l *lineageLog) Evict(a *Arrival) ([]int, error) {
	l.seen = append(l.seen, a.Lineage())
	return l.fifo.Evict(a)
}

// TestArrivalLineage checks what a policy may conclude from lineages: an
// arrival follows the previous one exactly when the memory applied that
// arrival's evictions and did nothing else to its rows in between (not
// after SetRows, an expiry or a rejected safe update), and a hand-built
// arrival's lineage is not known.
func TestArrivalLineage(t *testing.T) {
	x, y := []float32{1, 0}, []float32{0, 1}
	cases := []struct {
		name    string
		opts    []Option
		between func(m *Memory) error // what the memory does between two arrivals
		follows bool
	}{
		{"applied", nil, nil, true},
		{"set rows", nil, func(m *Memory) error { return m.SetRows(m.Rows()) }, false},
		{"expired", []Option{WithMaxAge(1)}, nil, false},
		// FIFO would evict the y rows for x rows: Algorithm 2 rejects it.
		{"rejected", []Option{WithSafeUpdate(true)}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := &lineageLog{fifo: NewFIFO()}
			m, err := New(6, 2, log, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			batch := slices.Concat(x, x)
			if c.name == "rejected" {
				m.Add(slices.Concat(y, y, y, x, x, x), nil, nil, 0)
			} else {
				m.Add(slices.Concat(y, x, y, x, y, x), nil, nil, 0)
			}
			st, err := m.Add(batch, nil, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			if st.Rejected != (c.name == "rejected") {
				t.Fatalf("first arrival rejected: %v", st.Rejected)
			}
			if c.between != nil {
				if err := c.between(m); err != nil {
					t.Fatal(err)
				}
			}
			// At step 2 the rows of step 0 are older than WithMaxAge(1)
			// allows; six rows reach the policy whatever expired.
			if st, err = m.Add(slices.Concat(batch, batch, batch), nil, nil, 2); err != nil {
				t.Fatal(err)
			}
			if (st.Expired > 0) != (c.name == "expired") {
				t.Fatalf("%d rows expired", st.Expired)
			}
			if len(log.seen) != 2 {
				t.Fatalf("%d arrivals, expected 2", len(log.seen))
			}
			first, second := log.seen[0], log.seen[1]
			if !first.Known() || !second.Known() {
				t.Fatalf("a memory's arrivals have unknown lineages %+v %+v", first, second)
			}
			if got := second.Follows(first); got != c.follows {
				t.Errorf("second arrival follows the first: %v, expected %v", got, c.follows)
			}
			if second.Follows(second) || first.Follows(second) {
				t.Error("an arrival follows itself or a later one")
			}
		})
	}
	var hand Arrival
	if hand.Lineage().Known() || hand.Lineage().Follows(hand.Lineage()) || hand.Lineage().Follows(Lineage{}) {
		t.Error("a hand-built arrival's lineage is known or follows")
	}
	// Two memories never follow each other.
	la, lb := &lineageLog{fifo: NewFIFO()}, &lineageLog{fifo: NewFIFO()}
	ma, _ := New(2, 2, la)
	mb, _ := New(2, 2, lb)
	for _, m := range []*Memory{ma, mb} {
		m.Add(slices.Concat(x, y, x), nil, nil, 0)
		m.Add(slices.Concat(y), nil, nil, 1)
	}
	if lb.seen[1].Follows(la.seen[0]) {
		t.Error("an arrival follows another memory's")
	}
}

// TestDUELCarriedAfterOtherChanges drives two memories, one managed by
// memory.DUEL (whose fast path carries state between arrivals) and one by
// the reference (which recomputes everything), through the same batches
// with what a training run does between them: safe updates rejected,
// rows re-embedded (SetRows, Refresh), rows expiring. They must hold the
// same rows after every batch: a rejected update followed by exactly one
// other change must not leave the fast path on the state of the update
// it computed and the memory never applied.
func TestDUELCarriedAfterOtherChanges(t *testing.T) {
	const k, z, b = 20, 4, 6
	for _, adm := range []Admission{Protected, Compete} {
		for _, opts := range [][]Option{
			{WithSafeUpdate(true)},
			{WithSafeUpdate(true), WithMaxAge(5)},
		} {
			r := rand.New(rand.NewPCG(uint64(adm), uint64(len(opts))))
			fast, _ := New(k, z, NewDUEL(adm), opts...)
			ref, _ := New(k, z, NewDUELReference(adm), opts...)
			rejected := 0
			for step := range 40 {
				batch := unitRows(r, b, z)
				sf, err := fast.Add(batch, nil, nil, step)
				if err != nil {
					t.Fatal(err)
				}
				sr, err := ref.Add(batch, nil, nil, step)
				if err != nil {
					t.Fatal(err)
				}
				if sf != sr || !slices.Equal(fast.Rows(), ref.Rows()) {
					t.Fatalf("%v %d options, step %d: the fast path's memory differs from the reference's (stats %+v, %+v)", adm, len(opts), step, sf, sr)
				}
				if sf.Rejected {
					rejected++
				}
				switch step % 3 {
				case 1: // re-embed every row
					rows := slices.Clone(fast.Rows())
					for i := range rows {
						rows[i] += float32(r.NormFloat64()) / 16
					}
					for _, m := range []*Memory{fast, ref} {
						if err := m.SetRows(rows); err != nil {
							t.Fatal(err)
						}
					}
				case 2: // re-embed one row
					if fast.Len() == 0 {
						continue
					}
					p := r.IntN(fast.Len())
					row := unitRows(r, 1, z)
					for _, m := range []*Memory{fast, ref} {
						if err := m.Refresh([]int{p}, row, step); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if rejected == 0 {
				t.Errorf("%v %d options: no update rejected, the test checks nothing", adm, len(opts))
			}
		}
	}
}
