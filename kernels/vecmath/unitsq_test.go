package vecmath

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// unitValues returns n values in [-1, 1] with some of the edges: ±1,
// zeros of both signs, the smallest subnormal.
func unitValues(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch r.IntN(10) {
		case 0:
			v[i] = float32(1 - 2*r.IntN(2))
		case 1:
			v[i] = float32(math.Copysign(0, -1))
		case 2:
			v[i] = math.Float32frombits(1)
		default:
			v[i] = float32(2*r.Float64() - 1)
		}
	}
	return v
}

// TestUnitSquares: UnitSquares (the AVX2 kernel where it runs) gives
// unitSquaresGo's bits and verdict on every length from 0 to 80 and on
// long rows, with a value beyond [-1, 1] (just above 1, just below -1, an
// infinity, NaNs of both signs) at every place of some rows; and the
// reference is the sum of squares within float64 rounding.
func TestUnitSquares(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	above1 := math.Nextafter32(1, 2)
	nan := float32(math.NaN())
	bads := []float32{above1, -above1, float32(math.Inf(1)), float32(math.Inf(-1)), nan, math.Float32frombits(math.Float32bits(nan) | 1<<31), 3}
	lengths := []int{1000, 4096 + 13}
	for n := range 81 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		x := unitValues(r, n)
		check := func(what string, want bool) {
			t.Helper()
			gs, gok := UnitSquares(x)
			ws, wok := unitSquaresGo(x)
			if math.Float64bits(gs) != math.Float64bits(ws) || gok != wok {
				t.Fatalf("n %d, %s: UnitSquares = %v, %v; unitSquaresGo %v, %v (%s)", n, what, gs, gok, ws, wok, ISA())
			}
			if wok != want {
				t.Fatalf("n %d, %s: ok %v, want %v", n, what, wok, want)
			}
		}
		check("unit values", true)
		var exact float64
		for _, v := range x {
			exact += float64(v) * float64(v)
		}
		if ws, _ := unitSquaresGo(x); math.Abs(ws-exact) > 1e-12*(1+exact) {
			t.Fatalf("n %d: unitSquaresGo %v, the sequential sum %v", n, ws, exact)
		}
		for i := 0; i < n; i += 1 + n/17 {
			for _, b := range bads {
				old := x[i]
				x[i] = b
				check("a bad value", false)
				x[i] = old
			}
		}
	}
}

// FuzzUnitSquares: UnitSquares and unitSquaresGo agree, bit for bit, on
// any values.
func FuzzUnitSquares(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x3f, 1, 0, 0x80, 0x3f})
	f.Add(make([]byte, 4*33))
	f.Fuzz(func(t *testing.T, data []byte) {
		x := make([]float32, len(data)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		gs, gok := UnitSquares(x)
		ws, wok := unitSquaresGo(x)
		same := math.Float64bits(gs) == math.Float64bits(ws) || (math.IsNaN(gs) && math.IsNaN(ws))
		if !same || gok != wok {
			t.Fatalf("UnitSquares(%v) = %v, %v; unitSquaresGo %v, %v", x, gs, gok, ws, wok)
		}
	})
}

// BenchmarkUnitSquares: a DUEL batch (256 rows of 128) row by row, the
// kernel in use against the Go reference.
func BenchmarkUnitSquares(b *testing.B) {
	x := unitValues(rand.New(rand.NewPCG(1, 2)), 256*128)
	for _, k := range []struct {
		name string
		f    func([]float32) (float64, bool)
	}{{ISA(), UnitSquares}, {"go", unitSquaresGo}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				for r := 0; r < len(x); r += 128 {
					k.f(x[r : r+128])
				}
			}
		})
	}
}
