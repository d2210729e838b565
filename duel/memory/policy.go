package memory

import (
	"fmt"
	"slices"
	"strings"
)

// An Arrival is what a policy sees when a batch of rows arrives at a full
// memory. Positions number the rows of Memory then those of Batch:
// 0..K-1 are the rows held, in order, and K+b is batch row b.
type Arrival struct {
	Memory []float32 // K x Z rows held, L2-normalised, oldest first
	Batch  []float32 // B x Z incoming rows, L2-normalised, in arrival order
	Z      int       // row length
	Seen   int64     // rows offered to the memory before this batch

	lineage Lineage // the memory that asks and the generation of its rows
}

// A Lineage names the rows an Arrival holds: two arrivals with the same
// known Lineage hold the same rows, so that a policy carrying state
// derived from the rows of one arrival (memory.DUEL's grid and
// similarities, cudaduel's device copy) knows it still describes the next
// without comparing them. Arrivals a Memory builds have a known lineage;
// one built by hand has the zero Lineage, which is not known and matches
// no other.
type Lineage struct {
	owner   *Memory // the memory that asks,
	gen     uint64  // the generation of its rows (equal generations, equal rows),
	applied uint64  // and its Memory.applied: how they came to be
}

// Lineage returns the lineage of a's rows.
func (a *Arrival) Lineage() Lineage { return a.lineage }

// Known reports whether l names rows: the arrival came from a Memory.
func (l Lineage) Known() bool { return l.owner != nil }

// Follows reports whether l is known and names the rows its memory holds
// once it has applied the evictions of an arrival of lineage prev, and
// done nothing else to its rows (no expiry, SetRows, refresh or rejected
// safe update since).
func (l Lineage) Follows(prev Lineage) bool {
	return l.Known() && l.owner == prev.owner && l.applied != 0 && l.applied == prev.gen+1
}

// K returns the number of rows held.
func (a *Arrival) K() int { return len(a.Memory) / a.Z }

// B returns the number of incoming rows.
func (a *Arrival) B() int { return len(a.Batch) / a.Z }

// A Policy decides which rows a full memory keeps when a batch arrives.
//
// Evict returns one position per batch row, in arrival order: the row that
// leaves when batch row b enters. It is a row held (0 <= p < K), a batch row
// that entered earlier (K <= p < K+b), or K+b itself when row b is turned
// away. No position leaves twice. The survivors keep their order: the rows
// held, then the batch rows that entered.
//
// A Policy value belongs to one Memory; it may keep state between calls.
type Policy interface {
	Name() string
	Evict(a *Arrival) ([]int, error)
}

// A policyEntry is a registered policy: its constructor, and whether it
// draws random numbers from the seed it is given.
type policyEntry struct {
	make   func(seed uint64) Policy
	seeded bool
}

// registry maps policy names to their constructors. Policies are
// deterministic for a given seed.
var registry = map[string]policyEntry{
	"duel":      {make: func(uint64) Policy { return NewDUEL(Protected) }},
	"fifo":      {make: func(uint64) Policy { return NewFIFO() }},
	"random":    {make: func(seed uint64) Policy { return NewRandom(seed) }, seeded: true},
	"reservoir": {make: func(seed uint64) Policy { return NewReservoir(seed) }, seeded: true},
}

// PolicyNames returns the registered policy names, sorted.
func PolicyNames() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// SeededPolicyNames returns the names of the registered policies that use
// the seed NewPolicy passes them (the randomised ones), sorted; the others
// ignore it.
func SeededPolicyNames() []string {
	var names []string
	for _, n := range PolicyNames() {
		if registry[n].seeded {
			names = append(names, n)
		}
	}
	return names
}

// NewPolicy returns a new policy by registered name, seeded with seed (only
// the policies SeededPolicyNames lists use it). "duel" uses the Protected
// admission; build other variants with NewDUEL.
func NewPolicy(name string, seed uint64) (Policy, error) {
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown memory policy %q, expected one of %s", name, strings.Join(PolicyNames(), ", "))
	}
	return e.make(seed), nil
}

// checkEvictions verifies that ev follows the Policy contract for a memory
// of k rows and a batch of b rows, so that a faulty policy is an error and
// never a corrupted memory.
func checkEvictions(name string, ev []int, k, b int) error {
	if len(ev) != b {
		return fmt.Errorf("policy %s: %d evictions for %d incoming rows", name, len(ev), b)
	}
	gone := make([]bool, k+b)
	for i, p := range ev {
		if p < 0 || p > k+i {
			return fmt.Errorf("policy %s: row %d evicts position %d, expected 0..%d", name, i, p, k+i)
		}
		if gone[p] {
			return fmt.Errorf("policy %s: row %d evicts position %d, which already left", name, i, p)
		}
		gone[p] = true
	}
	return nil
}
