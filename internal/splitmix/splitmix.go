// Package splitmix is a small deterministic random number generator built on
// SplitMix64. It is splittable by construction: Derive hashes a seed and any
// number of keys (step, index in batch, view, ...) into an independent seed,
// so every sample of the data pipeline gets its own stream and results do not
// depend on how many goroutines produce them.
package splitmix

import "math"

const golden = 0x9e3779b97f4a7c15

// mix is the SplitMix64 finaliser (Stafford's variant 13).
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Derive returns a seed for the stream named by keys under seed. Distinct key
// tuples give statistically independent streams.
func Derive(seed uint64, keys ...uint64) uint64 {
	h := mix(seed + golden)
	for _, k := range keys {
		h = mix(h ^ mix(k+golden))
	}
	return h
}

// RNG is a SplitMix64 generator. The zero value is a valid generator with
// seed 0. It is not safe for concurrent use; give each goroutine its own.
type RNG struct {
	state uint64
}

// New returns a generator seeded with seed.
func New(seed uint64) RNG { return RNG{state: seed} }

// Uint64 returns the next 64 random bits.
func (r *RNG) Uint64() uint64 {
	r.state += golden
	return mix(r.state)
}

// Float64 returns a uniform number in [0, 1) with 53 random bits.
func (r *RNG) Float64() float64 {
	return float64(r.Uint64()>>11) * (1.0 / (1 << 53))
}

// Uniform returns a uniform number in [a, b), a + (b-a)*u with the
// product rounded before the sum (converted explicitly, so that no
// compiler fuses the two, as GOAMD64=v3 and arm64 builds otherwise do): the
// same bits as Python's and PyTorch's a + (b-a)*u.
func (r *RNG) Uniform(a, b float64) float64 {
	return a + float64((b-a)*r.Float64())
}

// Intn returns a uniform integer in [0, n). It panics if n <= 0, which is a
// programming error. It uses Lemire's multiply-and-reject method, so it is
// unbiased.
func (r *RNG) Intn(n int) int {
	if n <= 0 {
		panic("splitmix: Intn with n <= 0")
	}
	un := uint64(n)
	hi, lo := mul64(r.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = mul64(r.Uint64(), un)
		}
	}
	return int(hi)
}

// mul64 returns the 128-bit product of a and b as (hi, lo).
func mul64(a, b uint64) (hi, lo uint64) {
	const mask32 = 1<<32 - 1
	a0, a1 := a&mask32, a>>32
	b0, b1 := b&mask32, b>>32
	w0 := a0 * b0
	t := a1*b0 + w0>>32
	w1 := t&mask32 + a0*b1
	hi = a1*b1 + t>>32 + w1>>32
	lo = a * b
	return hi, lo
}

// Perm4 returns a uniform random permutation of {0, 1, 2, 3}.
func (r *RNG) Perm4() [4]int {
	p := [4]int{0, 1, 2, 3}
	for i := 3; i > 0; i-- {
		j := r.Intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// ExpUniform returns exp(Uniform(log a, log b)), the log-uniform draw
// torchvision uses for aspect ratios.
func (r *RNG) ExpUniform(a, b float64) float64 {
	return math.Exp(r.Uniform(math.Log(a), math.Log(b)))
}
