package autograd_test

import (
	"testing"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/internal/proctime"
	"github.com/duel-ssl/duel/tensor"
)

// BenchmarkLogSoftmax times forward + backward of LogSoftmax over the
// logits of a contrastive loss with a memory bank (256 queries x 8192
// keys), the hottest op of the losses.
func BenchmarkLogSoftmax(b *testing.B) {
	x := ag.Param(uniform(rng(10), -5, 5, 256, 8192), "logits")
	g := uniform(rng(11), -1, 1, 256, 8192)
	b.SetBytes(int64(4 * x.Value.Numel()))
	c0 := proctime.CPUOrZero()
	for b.Loop() {
		x.ZeroGrad()
		tp := ag.NewTape()
		tp.BackwardWith(ag.LogSoftmax(tp, x, 1), g)
	}
	b.ReportMetric(float64(proctime.CPUOrZero()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkContrastiveLoss times an InfoNCE-style loss, forward and
// backward: normalize, similarity GEMM, log-softmax, mean of the positives.
func BenchmarkContrastiveLoss(b *testing.B) {
	const n, d = 256, 128
	q := ag.Param(uniform(rng(12), -1, 1, n, d), "q")
	k := ag.Param(uniform(rng(13), -1, 1, n, d), "k")
	eye := ag.Const(tensor.Eye(n))
	c0 := proctime.CPUOrZero()
	defer func() { b.ReportMetric(float64(proctime.CPUOrZero()-c0)/float64(b.N), "cpu-ns/op") }()
	for b.Loop() {
		q.ZeroGrad()
		k.ZeroGrad()
		tp := ag.NewTape()
		qn, kn := ag.L2Normalize(tp, q, 1), ag.L2Normalize(tp, k, 1)
		logits := ag.MulScalar(tp, ag.MatMul(tp, qn, ag.Transpose(tp, kn, 0, 1)), 5)
		lp := ag.LogSoftmax(tp, logits, 1)
		tp.Backward(ag.Neg(tp, ag.MeanAll(tp, ag.Sum(tp, ag.Mul(tp, lp, eye), 1, false))))
	}
}

// BenchmarkCrossEntropy times the fused cross-entropy, forward and
// backward, on MoCo-sized logits (256 queries x 16384 negatives).
func BenchmarkCrossEntropy(b *testing.B) {
	const n, c = 256, 16384
	x := ag.Param(uniform(rng(14), -5, 5, n, c), "logits")
	targets := make([]int, n)
	b.SetBytes(int64(4 * n * c))
	c0 := proctime.CPUOrZero()
	for b.Loop() {
		x.ZeroGrad()
		tp := ag.NewTape()
		tp.Backward(ag.CrossEntropy(tp, x, targets))
	}
	b.ReportMetric(float64(proctime.CPUOrZero()-c0)/float64(b.N), "cpu-ns/op")
}
