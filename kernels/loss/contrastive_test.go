package loss

import (
	"math"
	"math/rand/v2"
	"testing"
)

// contrastRef is the contrastive loss in float64 from its definition: the
// mean over the anchors x (rows×d) of -s⁺ + log(ε·exp(s⁺) + Σ exp(s⁻)),
// s = x·cᵀ/τ and x·negᵀ/τ, positive pos(r), batch negatives every other
// candidate but self(r) (self(r) < 0: none) when a.BatchNegatives.
func contrastRef(x, c, neg []float64, rows, cands, n, d int, pos, self func(int) int, a ContrastArgs) float64 {
	dot := func(u, v []float64, i, j int) float64 {
		var s float64
		for k := range d {
			s += u[i*d+k] * v[j*d+k]
		}
		return s / a.Tau
	}
	var total float64
	for r := range rows {
		sp := dot(x, c, r, pos(r))
		z := a.Eps * math.Exp(sp)
		for j := range cands {
			if a.BatchNegatives && j != pos(r) && j != self(r) {
				z += math.Exp(dot(x, c, r, j))
			}
		}
		for j := range n {
			z += math.Exp(dot(x, neg, r, j))
		}
		total += math.Log(z) - sp
	}
	return total / float64(rows)
}

func to64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TestContrastive checks InfoNCE and NTXent against their definition and
// their gradients against central differences of it, for every ε and
// negatives setting and odd sizes.
func TestContrastive(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	rnd := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(0.5 * r.NormFloat64())
		}
		return out
	}
	tests := []struct {
		name    string
		ntxent  bool
		b, n, d int
		a       ContrastArgs
	}{
		{"InfoNCE", false, 3, 4, 5, ContrastArgs{Tau: 0.5, Eps: 1, BatchNegatives: true}},
		{"InfoNCEMemory", false, 4, 3, 2, ContrastArgs{Tau: 0.3, Eps: 1}},
		{"InfoNCEEps0", false, 3, 2, 3, ContrastArgs{Tau: 0.5, Eps: 0, BatchNegatives: true}},
		{"InfoNCEOne", false, 1, 1, 1, ContrastArgs{Tau: 1, Eps: 0.5}},
		{"NTXent", true, 3, 0, 4, ContrastArgs{Tau: 0.5, Eps: 1, BatchNegatives: true}},
		{"NTXentMemory", true, 2, 3, 3, ContrastArgs{Tau: 0.4, Eps: 0.5, BatchNegatives: true}},
		{"NTXentMemoryOnlyEps0", true, 3, 2, 5, ContrastArgs{Tau: 0.5, Eps: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, n, d := tc.b, tc.n, tc.d
			rows := b
			if tc.ntxent {
				rows = 2 * b
			}
			x, neg := rnd(rows*d), rnd(n*d)
			var k []float32
			if !tc.ntxent {
				k = rnd(b * d)
			}
			gs, ge := make([]float32, rows*rows), make([]float32, rows*n)
			// ref is the float64 loss of the inputs x64 (anchors) and k64.
			var ref func(x64, k64 []float64) float64
			var l float64
			if tc.ntxent {
				l = NTXent(gs, ge, x, neg, b, n, d, tc.a)
				ref = func(x64, _ []float64) float64 {
					return contrastRef(x64, x64, to64(neg), rows, rows, n, d,
						func(r int) int { return (r + b) % rows }, func(r int) int { return r }, tc.a)
				}
			} else {
				l = InfoNCE(gs, ge, x, k, neg, b, n, d, tc.a)
				ref = func(x64, k64 []float64) float64 {
					return contrastRef(x64, k64, to64(neg), b, b, n, d,
						func(r int) int { return r }, func(int) int { return -1 }, tc.a)
				}
			}
			x64, k64 := to64(x), to64(k)
			if want := ref(x64, k64); math.Abs(l-want) > 1e-6*(1+math.Abs(want)) {
				t.Errorf("loss %v, want %v", l, want)
			}
			const seed = 1.5
			dx, dk := make([]float32, rows*d), make([]float32, len(k))
			if tc.ntxent {
				NTXentGrad(dx, gs, ge, x, neg, b, n, d, float32(seed/tc.a.Tau))
			} else {
				InfoNCEGrad(dx, dk, gs, ge, x, k, neg, b, n, d, float32(seed/tc.a.Tau))
			}
			const h = 1e-6
			check := func(what string, g []float32, v []float64) {
				for i := range v {
					old := v[i]
					v[i] = old + h
					up := ref(x64, k64)
					v[i] = old - h
					dn := ref(x64, k64)
					v[i] = old
					if want := seed * (up - dn) / (2 * h); math.Abs(float64(g[i])-want) > 1e-5*(1+math.Abs(want)) {
						t.Errorf("gradient of %s %d = %v, want %v", what, i, g[i], want)
					}
				}
			}
			check("anchors", dx, x64)
			check("keys", dk, k64)
		})
	}
}
