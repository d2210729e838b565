package autograd_test

import (
	"testing"
	"time"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

const benchM, benchK, benchN = 128, 128, 128

// gemmBackward runs MatMul's backward pass: dA = G·Bᵀ, dB = Aᵀ·G as GEMMs.
func gemmBackward(a, b *ag.Var) {
	a.ZeroGrad()
	b.ZeroGrad()
	tp := ag.NewTape()
	tp.BackwardWith(ag.MatMul(tp, a, b), tensor.Ones(benchM, benchN))
}

// naiveBackward computes the same gradients as broadcast multiply + reduce:
// dA[i,p] = Σⱼ G[i,j]·B[p,j], dB[p,j] = Σᵢ A[i,p]·G[i,j].
func naiveBackward(a, b *tensor.Tensor) (da, db *tensor.Tensor) {
	g := tensor.Ones(benchM, benchN)
	g3 := g.Reshape(benchM, 1, benchN)
	da = tensor.Sum(tensor.Mul(g3, b.Reshape(1, benchK, benchN)), 2, false)
	db = tensor.Sum(tensor.Mul(a.Reshape(benchM, benchK, 1), g3), 0, false)
	return da, db
}

func benchInputs() (*ag.Var, *ag.Var) {
	r := rng(9)
	return ag.Param(uniform(r, -1, 1, benchM, benchK), "a"), ag.Param(uniform(r, -1, 1, benchK, benchN), "b")
}

func BenchmarkMatMulBackward(b *testing.B) {
	av, bv := benchInputs()
	b.Run("gemm", func(b *testing.B) {
		for b.Loop() {
			gemmBackward(av, bv)
		}
	})
	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			naiveBackward(av.Value, bv.Value)
		}
	})
}

// BenchmarkMatMulBackwardRatio times both forms alternately in the same
// process and reports naive/gemm, the speed-up of computing the gradients
// as GEMMs.
func BenchmarkMatMulBackwardRatio(b *testing.B) {
	av, bv := benchInputs()
	var tg, tn time.Duration
	for b.Loop() {
		t0 := time.Now()
		gemmBackward(av, bv)
		t1 := time.Now()
		naiveBackward(av.Value, bv.Value)
		tn += time.Since(t1)
		tg += t1.Sub(t0)
	}
	b.ReportMetric(float64(tn)/float64(tg), "naive/gemm")
	b.ReportMetric(float64(tg.Nanoseconds())/float64(b.N), "gemm-ns/op")
	b.ReportMetric(float64(tn.Nanoseconds())/float64(b.N), "naive-ns/op")
}

// TestNaiveBackwardAgrees keeps the benchmark honest: both forms compute
// the same gradients.
func TestNaiveBackwardAgrees(t *testing.T) {
	av, bv := benchInputs()
	gemmBackward(av, bv)
	da, db := naiveBackward(av.Value, bv.Value)
	if d := tensor.MaxAbsDiff(av.Grad, da); d > 1e-3 {
		t.Fatalf("dA differs by %g", d)
	}
	if d := tensor.MaxAbsDiff(bv.Grad, db); d > 1e-3 {
		t.Fatalf("dB differs by %g", d)
	}
}
