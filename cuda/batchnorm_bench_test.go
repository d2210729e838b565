package cuda

import (
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// BenchmarkBatchNorm times the BatchNorm passes of a ResNet-18 CIFAR
// layer (batch 256, 64 channels, 32 x 32, NCHW, fused ReLU) on the GPU by
// device events, and reports GB/s of activation traffic: the training
// forward pass reads x twice for the statistics and once to normalise, and
// writes y (16 bytes per element); the backward pass reads x, dy and the
// mask twice (sums, then dx) and writes dx (28 bytes per element). GPU
// only.
func BenchmarkBatchNorm(b *testing.B) {
	d := needGPU(b)
	be, err := newBackend(d, 256)
	if err != nil {
		b.Fatal(err)
	}
	g := tensor.BatchNormGeom{N: 256, C: 64, S: 32 * 32, Splits: 1}
	n, c := g.N*g.C*g.S, g.C
	op := func(n int) tensor.Operand {
		return tensor.Operand{Buf: be.Alloc(n), Shape: []int{n}, Strides: []int{1}}
	}
	x, y, dy, dx := op(n), op(n), op(n), op(n)
	a := tensor.BatchNormArgs{Y: y, X: x, Gamma: op(c), Beta: op(c), RunningMean: op(c), RunningVar: op(c),
		Mean: op(c), InvStd: op(c), Eps: 1e-5, Momentum: 0.1, ReLU: true}
	be.Fill(a.Gamma, 1)
	be.Fill(a.RunningVar, 1)
	be.Fill(a.InvStd, 1)
	b.Run("train", func(b *testing.B) {
		per := deviceLoop(b, d, func() { be.BatchNormTrain(g, a) })
		b.ReportMetric(16*float64(n)/per.Seconds()/1e9, "GB/s")
		b.ReportMetric(float64(per.Microseconds()), "us/op(device)")
	})
	b.Run("backward", func(b *testing.B) {
		gr := tensor.BatchNormGrad{X: x, DY: dy, Y: y, Mean: a.Mean, InvStd: a.InvStd, Gamma: a.Gamma, Training: true,
			DX: dx, DGamma: op(c), DBeta: op(c)}
		per := deviceLoop(b, d, func() { be.BatchNormBackward(g, gr) })
		b.ReportMetric(28*float64(n)/per.Seconds()/1e9, "GB/s")
		b.ReportMetric(float64(per.Microseconds()), "us/op(device)")
	})
}
