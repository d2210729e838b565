package memory

import "math/rand/v2"

// Reservoir keeps a uniform sample of the whole stream (Vitter's
// Algorithm R): the t-th row of the stream (counting from 0, the rows that
// filled the memory included) enters with probability K/(t+1), in place of a
// uniformly chosen row held; otherwise it is turned away.
type Reservoir struct {
	rng *rand.PCG
}

// NewReservoir returns the reservoir-sampling policy, deterministic for seed.
func NewReservoir(seed uint64) *Reservoir {
	return &Reservoir{rng: rand.NewPCG(seed, rngStream)}
}

// Name returns "reservoir".
func (*Reservoir) Name() string { return "reservoir" }

// Evict draws j uniformly in 0..t for the t-th row of the stream; j < K
// evicts the j-th row held, otherwise the row itself is turned away.
func (p *Reservoir) Evict(a *Arrival) ([]int, error) {
	r := rand.New(p.rng)
	k := a.K()
	held := identity(k)
	ev := make([]int, a.B())
	for b := range ev {
		t := a.Seen + int64(b)
		j := r.Int64N(t + 1)
		if j < int64(k) {
			ev[b] = held[j]
			held[j] = k + b
		} else {
			ev[b] = k + b
		}
	}
	return ev, nil
}

// MarshalBinary returns the generator state.
func (p *Reservoir) MarshalBinary() ([]byte, error) { return p.rng.MarshalBinary() }

// UnmarshalBinary restores the generator state.
func (p *Reservoir) UnmarshalBinary(data []byte) error { return p.rng.UnmarshalBinary(data) }
