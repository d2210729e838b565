package splitmix

import (
	"math"
	"math/bits"
	"testing"
)

func TestDeriveDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for step := uint64(0); step < 50; step++ {
		for i := uint64(0); i < 50; i++ {
			for v := uint64(0); v < 2; v++ {
				s := Derive(7, step, i, v)
				if seen[s] {
					t.Fatalf("Derive(7, %d, %d, %d) repeats a seed", step, i, v)
				}
				seen[s] = true
			}
		}
	}
	if Derive(1, 2, 3) == Derive(1, 3, 2) {
		t.Fatal("Derive is symmetric in its keys")
	}
}

func TestMul64(t *testing.T) {
	r := New(3)
	for i := 0; i < 1000; i++ {
		a, b := r.Uint64(), r.Uint64()
		hi, lo := mul64(a, b)
		whi, wlo := bits.Mul64(a, b)
		if hi != whi || lo != wlo {
			t.Fatalf("mul64(%d, %d) = %d,%d want %d,%d", a, b, hi, lo, whi, wlo)
		}
	}
}

func TestIntnUniform(t *testing.T) {
	r := New(11)
	const n, draws = 7, 70000
	var counts [n]int
	for i := 0; i < draws; i++ {
		counts[r.Intn(n)]++
	}
	p := 1.0 / n
	se := math.Sqrt(p * (1 - p) / draws)
	for k, c := range counts {
		if d := math.Abs(float64(c)/draws - p); d > 4*se {
			t.Errorf("value %d: frequency %.4f, want %.4f ± %.4f", k, float64(c)/draws, p, 4*se)
		}
	}
}

func TestFloat64Range(t *testing.T) {
	r := New(5)
	var sum float64
	for i := 0; i < 10000; i++ {
		f := r.Float64()
		if f < 0 || f >= 1 {
			t.Fatalf("Float64 = %v out of [0,1)", f)
		}
		sum += f
	}
	if m := sum / 10000; math.Abs(m-0.5) > 0.02 {
		t.Fatalf("mean of Float64 = %v, want about 0.5", m)
	}
}

func TestPerm4(t *testing.T) {
	r := New(1)
	counts := map[[4]int]int{}
	for i := 0; i < 24000; i++ {
		counts[r.Perm4()]++
	}
	if len(counts) != 24 {
		t.Fatalf("Perm4 produced %d distinct permutations, want 24", len(counts))
	}
}
