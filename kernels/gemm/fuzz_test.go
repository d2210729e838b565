package gemm

import (
	"encoding/binary"
	"math"
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

// FuzzSgemmBF16 checks SgemmBF16 (its native kernels where the CPU has
// them, else the emulation) against the float64 product of the rounded
// factors on small random problems, as FuzzSgemm does Sgemm.
func FuzzSgemmBF16(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(0), uint8(0), uint64(1))
	f.Add(uint8(15), uint8(33), uint8(7), uint8(3), uint8(5), uint64(2))
	f.Add(uint8(70), uint8(64), uint8(69), uint8(1), uint8(9), uint64(3))
	f.Add(uint8(0), uint8(5), uint8(3), uint8(2), uint8(0), uint64(4))
	f.Fuzz(func(t *testing.T, m, n, k, flags, pad uint8, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 98))
		ab := [][2]float32{{1, 0}, {-0.5, 1.5}, {2, 1}, {0, 0.5}, {1, -1}, {0.25, 0}}[int(flags>>2)%6]
		p := newProblem(r, flags&1 != 0, flags&2 != 0, int(m)%71, int(n)%71, int(k)%71, int(pad)%17, ab[0], ab[1])
		checkBF16(t, p, 2)
	})
}

// FuzzBF16Conversions checks the vector roundings (PairPlanes, BF16Bits)
// against roundBF16 on arbitrary bit patterns.
func FuzzBF16Conversions(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x7f, 1, 0, 0, 0, 0, 0x80, 0x80, 0x3f})
	f.Fuzz(func(t *testing.T, raw []byte) {
		n := len(raw) / 8
		r0, r1 := make([]float32, n), make([]float32, n)
		for i := range n {
			r0[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[8*i:]))
			r1[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[8*i+4:]))
		}
		words := make([]float32, n)
		PairPlanes(words, r0, r1)
		b := make([]uint16, n)
		BF16Bits(b, r0)
		for i := range n {
			want := uint32(roundBF16(r0[i])) | uint32(roundBF16(r1[i]))<<16
			if got := math.Float32bits(words[i]); got != want {
				t.Fatalf("PairPlanes[%d] = %#x, want %#x", i, got, want)
			}
			if b[i] != roundBF16(r0[i]) {
				t.Fatalf("BF16Bits[%d] = %#x, want %#x", i, b[i], roundBF16(r0[i]))
			}
		}
	})
}
