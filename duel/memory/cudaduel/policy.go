package cudaduel

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
)

// Policy is memory.DUEL computed on a GPU: a memory.Policy whose Evict
// runs one update of a Memory per arriving batch. It makes the same
// decisions as memory.NewDUEL with the same admission (the tests check it
// on random streams). Like the CPU fast path it carries the memory's grid
// rows, scores and K x K similarities on the device from one update to the
// next, so that a stream of arrivals copies only the batches; it loads the
// memory again (and recomputes its similarities) when the memory no longer
// holds exactly the rows it kept: when the arrival's lineage
// (memory.Lineage) does not follow the last one's, or, for an arrival
// built by hand, when its rows differ from those kept. Its device memory
// is freed by Close.
type Policy struct {
	g         cuda.GPU
	admission memory.Admission
	mem       *Memory
	// The device holds the rows kept by the last update: those the
	// memory holds after the evictions of an arrival of lineage last, or,
	// when that arrival's lineage was not known (built by hand), rows.
	last    memory.Lineage
	rows    []float32 // valid when hasRows
	next    []float32
	hasRows bool
	loads   int // updates that loaded the rows (for tests)
}

// NewPolicy returns the DUEL policy with admission adm on g (a
// *cuda.Device; Evict fails when g is nil).
func NewPolicy(g cuda.GPU, adm memory.Admission) *Policy {
	return &Policy{g: g, admission: adm}
}

// PolicyFor returns what builds, for an admission, the DUEL policy on g:
// a Policy for Protected and Compete, which the kernel runs, nil for the
// others (train.Options.DUELPolicy for a run on g, where nil leaves the
// host's memory.NewDUEL deciding).
func PolicyFor(g cuda.GPU) func(memory.Admission) memory.Policy {
	return func(adm memory.Admission) memory.Policy {
		if adm != memory.Protected && adm != memory.Compete {
			return nil
		}
		return NewPolicy(g, adm)
	}
}

// Name returns "duel".
func (*Policy) Name() string { return "duel" }

// Evict runs the policy on one arrival (memory.Policy).
func (p *Policy) Evict(a *memory.Arrival) ([]int, error) {
	if noGPU(p.g) {
		return nil, fmt.Errorf("duel (cuda): no device")
	}
	if a.Z <= 0 || len(a.Memory) == 0 || len(a.Memory)%a.Z != 0 || len(a.Batch)%a.Z != 0 {
		return nil, fmt.Errorf("duel (cuda): memory of %d values and batch of %d values, expected positive multiples of the row length %d", len(a.Memory), len(a.Batch), a.Z)
	}
	k, z, b := a.K(), a.Z, a.B()
	if p.mem != nil && (p.mem.k != k || p.mem.z != z) {
		p.Close()
	}
	if p.mem == nil {
		m, err := NewMemory(p.g, k, z, MemoryOptions{Admission: p.admission, Batch: min(b, duelMaxRows-k)})
		if err != nil {
			return nil, fmt.Errorf("duel (cuda): %w", err)
		}
		p.mem = m
		p.forget()
	}
	// The rows on the device are the arrival's when its memory applied
	// the last update's evictions and nothing else (its lineage follows
	// the last one: no comparison), or, for an arrival built by hand,
	// when they are equal to the rows the last update kept.
	lin := a.Lineage()
	carried := p.mem.loaded && (lin.Follows(p.last) || !lin.Known() && p.hasRows && slices.Equal(p.rows, a.Memory))
	if !carried {
		p.loads++
		if err := p.mem.Load(a.Memory, nil); err != nil {
			p.forget()
			return nil, fmt.Errorf("duel (cuda): %w", err)
		}
	}
	res, err := p.mem.Update(a.Batch)
	if err != nil {
		p.forget()
		return nil, fmt.Errorf("duel (cuda): %w", err)
	}
	p.last, p.hasRows = lin, !lin.Known()
	if p.hasRows {
		p.next = p.next[:0]
		for _, c := range res.Kept {
			if c < k {
				p.next = append(p.next, a.Memory[c*z:(c+1)*z]...)
			} else {
				p.next = append(p.next, a.Batch[(c-k)*z:(c-k+1)*z]...)
			}
		}
		p.rows, p.next = p.next, p.rows
	}
	return res.Evicted, nil
}

// forget makes the next Evict load the arrival's rows.
func (p *Policy) forget() {
	p.last, p.hasRows = memory.Lineage{}, false
}

// Close frees the policy's device memory; the next Evict allocates it
// again.
func (p *Policy) Close() error {
	if p.mem == nil {
		return nil
	}
	err := p.mem.Close()
	p.mem = nil
	p.forget()
	return err
}

// AdmissionMode returns the admission the policy decides with
// (memory.Admitting).
func (p *Policy) AdmissionMode() memory.Admission { return p.admission }

// MarshalBinary records the admission, as memory.DUEL does: a memory's
// checkpoint is the same whichever of the two decided.
func (p *Policy) MarshalBinary() ([]byte, error) { return []byte{byte(p.admission)}, nil }

// UnmarshalBinary restores the admission from a checkpoint of either
// policy; the device's copy of the memory is dropped (the next Evict
// loads the rows). An admission the kernel does not run is an error.
func (p *Policy) UnmarshalBinary(data []byte) error {
	if len(data) != 1 {
		return fmt.Errorf("duel (cuda): policy state of %d bytes, expected one admission byte", len(data))
	}
	adm := memory.Admission(data[0])
	if adm != memory.Protected && adm != memory.Compete {
		return fmt.Errorf("duel (cuda): the checkpoint's admission is %v, the GPU kernel runs %v and %v only (use --device cpu)", adm, memory.Protected, memory.Compete)
	}
	if adm != p.admission {
		if err := p.Close(); err != nil {
			return err
		}
		p.admission = adm
	}
	p.forget()
	return nil
}
