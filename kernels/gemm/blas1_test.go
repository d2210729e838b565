package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

var blas1Sizes = []int{0, 1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4099}

// TestSaxpy compares Saxpy, with and without assembly, to a float64 loop.
func TestSaxpy(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, vec := range []bool{false, true} {
		if vec && !hasVecBLAS1 {
			continue
		}
		for _, n := range blas1Sizes {
			for _, alpha := range []float32{0, 1, -2.5} {
				x, y := randSlice(r, n+1), randSlice(r, n+1)
				orig := append([]float32(nil), y...)
				done := 0
				if vec {
					done = saxpyAsm(alpha, x[:n], y[:n])
				}
				saxpyGo(alpha, x[done:n], y[done:n])
				for i := 0; i < n; i++ {
					want := float64(orig[i]) + float64(alpha)*float64(x[i])
					if d := math.Abs(float64(y[i]) - want); d > 1e-6*(math.Abs(float64(orig[i]))+math.Abs(float64(alpha*x[i]))) {
						t.Fatalf("vec=%v n=%d alpha=%v: y[%d] = %v, want %v", vec, n, alpha, i, y[i], want)
					}
				}
				if y[n] != orig[n] {
					t.Fatalf("vec=%v n=%d: wrote past the end", vec, n)
				}
			}
		}
	}
	y := []float32{1, 2}
	Saxpy(2, []float32{3, 4}, y)
	if y[0] != 7 || y[1] != 10 {
		t.Errorf("Saxpy(2, [3 4], [1 2]) = %v, want [7 10]", y)
	}
}

// TestSdot compares Sdot, with and without assembly, to a float64 loop.
func TestSdot(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, vec := range []bool{false, true} {
		if vec && !hasVecBLAS1 {
			continue
		}
		for _, n := range blas1Sizes {
			x, y := randSlice(r, n), randSlice(r, n)
			var got float32
			done := 0
			if vec {
				got, done = sdotAsm(x, y)
			}
			got += sdotGo(x[done:], y[done:])
			var want, scale float64
			for i := range x {
				want += float64(x[i]) * float64(y[i])
				scale += math.Abs(float64(x[i]) * float64(y[i]))
			}
			if d := math.Abs(float64(got) - want); d > 1e-6*scale+1e-30 {
				t.Fatalf("vec=%v n=%d: Sdot = %v, want %v", vec, n, got, want)
			}
		}
	}
	if got := Sdot([]float32{1, 2, 3}, []float32{4, 5, 6}); got != 32 {
		t.Errorf("Sdot([1 2 3], [4 5 6]) = %v, want 32", got)
	}
}

// TestBLAS1Panics checks the length checks.
func TestBLAS1Panics(t *testing.T) {
	for name, f := range map[string]func(){
		"Saxpy": func() { Saxpy(1, make([]float32, 3), make([]float32, 2)) },
		"Sdot":  func() { Sdot(make([]float32, 3), make([]float32, 4)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with different lengths: no panic", name)
				}
			}()
			f()
		}()
	}
}

// BenchmarkSaxpy and BenchmarkSdot time the level-1 helpers on 4096 floats
// (L1-resident), against the plain Go loops.
func BenchmarkSaxpy(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, y := randSlice(r, 4096), randSlice(r, 4096)
	b.Run("Saxpy", func(b *testing.B) {
		b.SetBytes(4096 * 4)
		for i := 0; i < b.N; i++ {
			Saxpy(1e-9, x, y)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(4096 * 4)
		for i := 0; i < b.N; i++ {
			saxpyGo(1e-9, x, y)
		}
	})
}

func BenchmarkSdot(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, y := randSlice(r, 4096), randSlice(r, 4096)
	var sink float32
	b.Run("Sdot", func(b *testing.B) {
		b.SetBytes(4096 * 4)
		for i := 0; i < b.N; i++ {
			sink += Sdot(x, y)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(4096 * 4)
		for i := 0; i < b.N; i++ {
			sink += sdotGo(x, y)
		}
	})
	_ = sink
}
