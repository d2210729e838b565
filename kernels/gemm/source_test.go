package gemm

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// matrixSource is a PanelSource over a stored row-major k x n matrix,
// written element by element from PackPanels's contract.
type matrixSource struct {
	b     []float32
	ldb   int
	k, n  int
	calls atomic.Int64
}

func (s *matrixSource) PackPanels(dst []float32, p0, kc, j0, nc, nr, q0, q1 int) {
	s.calls.Add(1)
	for q := q0; q < q1; q++ {
		for p := range kc {
			for j := range nr {
				v := float32(0)
				if col := q*nr + j; col < nc {
					v = s.b[(p0+p)*s.ldb+j0+col]
				}
				dst[q*nr*kc+p*nr+j] = v
			}
		}
	}
}

// TestSgemmSourceBitIdentical checks that a product whose B comes from a
// PanelSource gives Sgemm's bits on the stored B, with every kernel, on
// one thread and several, whichever way the threads split the work, and
// for empty products.
func TestSgemmSourceBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	shapes := [][3]int{{1, 1, 1}, {7, 5, 3}, {6, 16, 9}, {13, 33, 17}, {64, 1024, 144}, {2300, 100, 70}, {64, 700, 1000}, {300, 257, 513}, {0, 5, 5}, {5, 0, 5}, {5, 5, 0}}
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for _, beta := range []float32{0, 0.5} {
			p := newProblem(r, false, false, m, n, k, 0, 1, beta)
			src := &matrixSource{b: p.b, ldb: p.ldb, k: k, n: n}
			for _, kn := range available {
				for _, run := range []struct {
					threads int
					adjust  func(*call)
				}{{1, nil}, {2, nil}, {3, nil}, {2, func(c *call) { c.prepackB, c.rowsOnly = false, false }}} {
					want := p
					want.c = append([]float32(nil), p.c...)
					sgemmAdjusted(kn, want, run.threads, run.adjust)
					got := problem{m: m, n: n, k: k, alpha: 1, a: p.a, lda: p.lda, beta: beta, c: append([]float32(nil), p.c...), ldc: p.ldc, src: src}
					sgemmAdjusted(kn, got, run.threads, run.adjust)
					for j := range got.c {
						if math.Float32bits(got.c[j]) != math.Float32bits(want.c[j]) {
							t.Fatalf("%s %v beta %v threads %d: C[%d] = %v from the source, %v from B", kn.name, s, beta, run.threads, j, got.c[j], want.c[j])
						}
					}
				}
			}
			if m*n*k > 0 && src.calls.Load() == 0 {
				t.Fatalf("%v: the source was never asked for a panel", s)
			}
		}
	}
}

// TestSgemmSourceAPI checks the exported entry points against Sgemm and
// that a nil source is refused.
func TestSgemmSourceAPI(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	m, n, k := 70, 130, 90
	p := newProblem(r, false, false, m, n, k, 0, 1, 0)
	want := make([]float32, m*n)
	Sgemm(false, false, m, n, k, 1, p.a, p.lda, p.b, p.ldb, 0, want, n)
	for name, f := range map[string]func(int, int, int, []float32, int, PanelSource, float32, []float32, int){"SgemmSource": SgemmSource, "SgemmSerialSource": SgemmSerialSource} {
		got := make([]float32, m*n)
		f(m, n, k, p.a, p.lda, &matrixSource{b: p.b, ldb: p.ldb, k: k, n: n}, 0, got, n)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: C[%d] = %v, Sgemm %v", name, i, got[i], want[i])
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("SgemmSource accepted a nil source")
		}
	}()
	SgemmSource(1, 1, 1, []float32{1}, 1, nil, 0, make([]float32, 1), 1)
}

// TestPackedPanelWidth checks that the width reported is the tile's.
func TestPackedPanelWidth(t *testing.T) {
	for _, m := range []int{1, 16, 100, 1000} {
		nr, packs := PackedPanelWidth(m)
		kn := active.forRows(m)
		if nr != kn.nr || packs == kn.bInPlace {
			t.Fatalf("m %d: PackedPanelWidth = %d, %v; kernel %s has nr %d, bInPlace %v", m, nr, packs, kn.name, kn.nr, kn.bInPlace)
		}
	}
}
