package autograd_test

import (
	"testing"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// BenchmarkTapeOverhead records and runs backward through a chain of 100
// ops on a one-element value: the fixed cost of the tape per op.
func BenchmarkTapeOverhead(b *testing.B) {
	x := ag.Param(tensor.Scalar(1), "x")
	tp := ag.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		x.ZeroGrad()
		y := x
		for range 50 {
			y = ag.MulScalar(tp, ag.AddScalar(tp, y, 1), 0.5)
		}
		tp.Backward(y)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/node")
}
