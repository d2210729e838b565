package loss

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// composedNTXent is NT-Xent (ε = 1, batch negatives, optional extra
// negatives) written with generic autograd ops, as a PyTorch user would:
// the independent reference and the peer of the fused op's benchmark.
func composedNTXent(tp *ag.Tape, z1, z2, neg *ag.Var, tau float64) *ag.Var {
	b := z1.Value.Dim(0)
	z := ag.Concat(tp, 0, z1, z2)
	s := ag.MulScalar(tp, ag.MatMul(tp, z, ag.Transpose(tp, z, 0, 1)), float32(1/tau))
	mask := tensor.New(2*b, 2*b)
	onehot := tensor.New(2*b, 2*b)
	for a := range 2 * b {
		mask.Set(-1e9, a, a)
		onehot.Set(1, a, (a+b)%(2*b))
	}
	logits := ag.Add(tp, s, ag.Const(mask))
	if neg != nil {
		e := ag.MulScalar(tp, ag.MatMul(tp, z, ag.Transpose(tp, neg.Detach(), 0, 1)), float32(1/tau))
		logits = ag.Concat(tp, 1, logits, e)
		onehot = tensor.Concat(1, onehot, tensor.New(2*b, neg.Value.Dim(0)))
	}
	picked := ag.Mul(tp, ag.LogSoftmax(tp, logits, 1), ag.Const(onehot))
	return ag.MulScalar(tp, ag.SumAll(tp, picked), float32(-1/float64(2*b)))
}

// composedBarlow is BarlowTwins written with generic autograd ops.
func composedBarlow(tp *ag.Tape, z1, z2 *ag.Var, lambda float64) *ag.Var {
	b, d := z1.Value.Dim(0), z1.Value.Dim(1)
	norm := func(z *ag.Var) *ag.Var {
		c := ag.Sub(tp, z, ag.Mean(tp, z, 0, true))
		v := ag.Mean(tp, ag.Square(tp, c), 0, true)
		return ag.Div(tp, c, ag.Sqrt(tp, ag.AddScalar(tp, v, BarlowBNEps)))
	}
	c := ag.MulScalar(tp, ag.MatMul(tp, ag.Transpose(tp, norm(z1), 0, 1), norm(z2)), 1/float32(b))
	eye := ag.Const(tensor.Eye(d))
	off := tensor.Full(1, d, d)
	for i := range d {
		off.Set(0, i, i)
	}
	on := ag.SumAll(tp, ag.Square(tp, ag.Sub(tp, ag.Mul(tp, c, eye), eye)))
	offd := ag.SumAll(tp, ag.Square(tp, ag.Mul(tp, c, ag.Const(off))))
	return ag.Add(tp, on, ag.MulScalar(tp, offd, float32(lambda)))
}

type lossFn func(tp *ag.Tape, z1, z2, neg *ag.Var) *ag.Var

func pairs(tau, lambda float64) map[string][2]lossFn {
	opt := ContrastiveOptions{Tau: tau, Eps: 1, BatchNegatives: true}
	return map[string][2]lossFn{
		"NTXent": {
			func(tp *ag.Tape, z1, z2, neg *ag.Var) *ag.Var { return NTXent(tp, z1, z2, neg, opt) },
			func(tp *ag.Tape, z1, z2, neg *ag.Var) *ag.Var { return composedNTXent(tp, z1, z2, neg, tau) },
		},
		"BarlowTwins": {
			func(tp *ag.Tape, z1, z2, _ *ag.Var) *ag.Var { return BarlowTwins(tp, z1, z2, lambda) },
			func(tp *ag.Tape, z1, z2, _ *ag.Var) *ag.Var { return composedBarlow(tp, z1, z2, lambda) },
		},
	}
}

func inputs(r *rand.Rand, b, d, n int) (z1, z2, neg *ag.Var) {
	return ag.NewVar(tensor.FromSlice(randUnit(r, b, d), b, d), true),
		ag.NewVar(tensor.FromSlice(randUnit(r, b, d), b, d), true),
		ag.Const(tensor.FromSlice(randUnit(r, n, d), n, d))
}

// valueAndGrads runs f forward and backward and returns the loss and the
// gradients of z1 and z2 (which are reset first).
func valueAndGrads(f lossFn, z1, z2, neg *ag.Var) (float32, []float32, []float32) {
	z1.Grad, z2.Grad = nil, nil
	tp := ag.NewTape()
	out := f(tp, z1, z2, neg)
	tp.Backward(out)
	return out.Value.Item(), z1.Grad.Data(), z2.Grad.Data()
}

// TestFusedMatchesComposition checks the fused losses against the same
// math written with generic autograd ops.
func TestFusedMatchesComposition(t *testing.T) {
	z1, z2, neg := inputs(rand.New(rand.NewPCG(8, 9)), 12, 16, 9)
	for name, p := range pairs(0.5, 0.05) {
		v1, g1a, g1b := valueAndGrads(p[0], z1, z2, neg)
		v2, g2a, g2b := valueAndGrads(p[1], z1, z2, neg)
		if math.Abs(float64(v1-v2)) > 1e-4*math.Abs(float64(v2)) {
			t.Errorf("%s: fused %v, composed %v", name, v1, v2)
		}
		for _, g := range [][2][]float32{{g1a, g2a}, {g1b, g2b}} {
			var scale, worst float64
			for i := range g[1] {
				scale = math.Max(scale, math.Abs(float64(g[1][i])))
				worst = math.Max(worst, math.Abs(float64(g[0][i]-g[1][i])))
			}
			if worst > 1e-4*scale {
				t.Errorf("%s: gradients differ by %.3g (largest %.3g)", name, worst, scale)
			}
		}
	}
}

// BenchmarkFusedVsComposed runs each fused loss and its composition of
// generic autograd ops alternately in the same process (the paper's
// CIFAR-10 D-SimCLR shape: batch 256, 256-d, 256 memory negatives) and
// reports the median time of each and their ratio (composed/fused).
func BenchmarkFusedVsComposed(b *testing.B) {
	z1, z2, neg := inputs(rand.New(rand.NewPCG(1, 2)), 256, 256, 256)
	for name, p := range pairs(0.5, DefaultBarlowLambda) {
		b.Run(name, func(b *testing.B) {
			var tf, tc []time.Duration
			for b.Loop() {
				for k, f := range p {
					start := time.Now()
					valueAndGrads(f, z1, z2, neg)
					if k == 0 {
						tf = append(tf, time.Since(start))
					} else {
						tc = append(tc, time.Since(start))
					}
				}
			}
			mf, mc := median(tf), median(tc)
			b.ReportMetric(float64(mf.Microseconds()), "fused-µs")
			b.ReportMetric(float64(mc.Microseconds()), "composed-µs")
			b.ReportMetric(float64(mc)/float64(mf), "composed/fused")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}
