package memory

import "math/rand/v2"

// Random evicts, for each incoming row, a uniformly chosen row among the K
// rows held at that moment (rows of the same batch that entered earlier
// included).
type Random struct {
	rng *rand.PCG
}

// NewRandom returns the uniform-eviction policy, deterministic for seed.
func NewRandom(seed uint64) *Random {
	return &Random{rng: rand.NewPCG(seed, rngStream)}
}

// rngStream is the PCG stream constant of the randomised policies.
const rngStream = 0x6475656c // "duel"

// Name returns "random".
func (*Random) Name() string { return "random" }

// Evict draws one victim per incoming row.
func (p *Random) Evict(a *Arrival) ([]int, error) {
	r := rand.New(p.rng)
	k := a.K()
	held := identity(k) // held[j]: position of the j-th row held
	ev := make([]int, a.B())
	for b := range ev {
		j := r.IntN(k)
		ev[b] = held[j]
		held[j] = k + b
	}
	return ev, nil
}

// MarshalBinary returns the generator state.
func (p *Random) MarshalBinary() ([]byte, error) { return p.rng.MarshalBinary() }

// UnmarshalBinary restores the generator state.
func (p *Random) UnmarshalBinary(data []byte) error { return p.rng.UnmarshalBinary(data) }

// identity returns 0, 1, ..., n-1.
func identity(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
