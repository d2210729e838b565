package cuda

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/duel/memory"
)

// DUELPolicy is memory.DUEL computed on a GPU: a memory.Policy whose Evict
// runs one DUELUpdate per arriving batch. It makes the same decisions as
// memory.NewDUEL with the same admission (the tests check it on random
// streams). Like the CPU fast path it carries the scores of the rows it kept
// to the next update, and recomputes them (K x K similarities) when the
// memory no longer holds exactly those rows.
type DUELPolicy struct {
	g         gpu
	admission memory.Admission
	rows      []float32 // the rows kept by the last update, in order
	scores    []float64 // their scores
}

// NewDUELPolicy returns the DUEL policy with admission adm on device d.
func NewDUELPolicy(d *Device, adm memory.Admission) *DUELPolicy {
	p := &DUELPolicy{admission: adm}
	if d != nil {
		p.g = d
	}
	return p
}

// Name returns "duel".
func (*DUELPolicy) Name() string { return "duel" }

// Evict runs the policy on one arrival (memory.Policy).
func (p *DUELPolicy) Evict(a *memory.Arrival) ([]int, error) {
	if p.g == nil {
		return nil, fmt.Errorf("duel (cuda): no device")
	}
	opt := DUELOptions{Admission: p.admission}
	if slices.Equal(p.rows, a.Memory) && len(p.scores) == a.K() {
		opt.Scores = p.scores
	}
	res, err := duelUpdate(p.g, a.Memory, a.Batch, a.Z, opt)
	if err != nil {
		return nil, fmt.Errorf("duel (cuda): %w", err)
	}
	p.rows = p.rows[:0]
	for _, c := range res.Kept {
		if c < a.K() {
			p.rows = append(p.rows, a.Memory[c*a.Z:(c+1)*a.Z]...)
		} else {
			p.rows = append(p.rows, a.Batch[(c-a.K())*a.Z:(c-a.K()+1)*a.Z]...)
		}
	}
	p.scores = res.Scores
	return res.Evicted, nil
}
