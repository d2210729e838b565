package autograd_test

import (
	"math"
	"testing"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// TestLaneOpsLarge runs the lane ops on inputs large enough to be split
// across goroutines, along the last axis (in place) and a middle axis
// (gathered), and compares with a float64 reference; run it with -race.
func TestLaneOpsLarge(t *testing.T) {
	r := rng(12)
	x := uniform(r, -4, 4, 8, 600, 9)
	for _, axis := range []int{1, 2} {
		outer, n, inner := 1, x.Dim(axis), 1
		for _, d := range x.Shape()[:axis] {
			outer *= d
		}
		for _, d := range x.Shape()[axis+1:] {
			inner *= d
		}
		xd := x.Data()
		ls := ag.LogSoftmax(ag.NewTape(), ag.Param(x, "x"), axis).Value.Data()
		sm := ag.Softmax(nil, ag.Const(x), axis).Value.Data()
		nm := ag.L2Normalize(nil, ag.Const(x), axis).Value.Data()
		for o := range outer {
			for j := range inner {
				at := func(k int) int { return (o*n+k)*inner + j }
				var s, q float64
				for k := range n {
					s += math.Exp(float64(xd[at(k)]))
					q += float64(xd[at(k)]) * float64(xd[at(k)])
				}
				for k := range n {
					i := at(k)
					v := float64(xd[i])
					if d := math.Abs(float64(ls[i]) - (v - math.Log(s))); d > 1e-5 {
						t.Fatalf("axis %d: LogSoftmax at %d off by %g", axis, i, d)
					}
					if d := math.Abs(float64(sm[i]) - math.Exp(v)/s); d > 1e-6 {
						t.Fatalf("axis %d: Softmax at %d off by %g", axis, i, d)
					}
					if d := math.Abs(float64(nm[i]) - v/math.Sqrt(q)); d > 1e-6 {
						t.Fatalf("axis %d: L2Normalize at %d off by %g", axis, i, d)
					}
				}
			}
		}
	}
	// Backward passes on the parallel path agree with their formulas too:
	// Σ softmax = 1 means ∂/∂x Σ Softmax(x) = 0.
	v := ag.Param(x, "x")
	tp := ag.NewTape()
	tp.Backward(ag.SumAll(tp, ag.Softmax(tp, v, 1)))
	if m := tensor.MaxAbsDiff(v.Grad, tensor.New(x.Shape()...)); m > 1e-6 {
		t.Fatalf("gradient of Σ softmax is %g, want 0", m)
	}
}
