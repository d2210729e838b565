package gemm

import (
	"math/rand/v2"
	"testing"
)

// FuzzSgemm checks every kernel against the float64 reference on small
// random problems: shapes up to 70 (so that the tiles of every kernel have
// edges), any transposition, padded strides and alpha/beta among a few
// values (including beta = 0 over NaNs).
func FuzzSgemm(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(0), uint8(0), uint64(1))
	f.Add(uint8(15), uint8(33), uint8(7), uint8(3), uint8(5), uint64(2))
	f.Add(uint8(70), uint8(64), uint8(70), uint8(1), uint8(9), uint64(3))
	f.Add(uint8(0), uint8(5), uint8(3), uint8(2), uint8(0), uint64(4))
	f.Add(uint8(29), uint8(31), uint8(0), uint8(0), uint8(14), uint64(5))
	f.Fuzz(func(t *testing.T, m, n, k, flags, pad uint8, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 99))
		ab := [][2]float32{{1, 0}, {-0.5, 1.5}, {2, 1}, {0, 0.5}, {1, -1}, {0.25, 0}}[int(flags>>2)%6]
		p := newProblem(r, flags&1 != 0, flags&2 != 0, int(m)%71, int(n)%71, int(k)%71, int(pad)%17, ab[0], ab[1])
		want, scale := refSgemm(p)
		for _, kn := range available {
			checkAgainst(t, kn, p, want, scale)
		}
	})
}
