package resnet

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
)

// BenchmarkTrainStep times forward + backward of CIFAR-stem ResNets on
// 32x32 inputs (no optimizer: duelctl bench step includes SGD), in fp32
// and with the CPU backend's products and convolutions in bf16.
func BenchmarkTrainStep(b *testing.B) {
	for _, tc := range []struct {
		arch      string
		batch     int
		precision string
	}{{"resnet18-w16", 128, "fp32"}, {"resnet18", 32, "fp32"}, {"resnet50", 32, "fp32"}, {"resnet18", 32, "bf16"}, {"resnet50", 32, "bf16"}} {
		b.Run(fmt.Sprintf("%s/b%d/%s", tc.arch, tc.batch, tc.precision), func(b *testing.B) {
			if err := tensor.SetCPUPrecision(tc.precision, tc.precision); err != nil {
				b.Fatal(err)
			}
			defer tensor.SetCPUPrecision("fp32", "fp32")
			m, in, a, r := benchModel(b, tc.arch, tc.batch)
			g := tensor.New(tc.batch, 10)
			nn.NormalInit(g, 1, r)
			for b.Loop() {
				a.Reset()
				tp := autograd.NewTape()
				out := m.Forward(tp, in)
				tp.BackwardWith(out, g)
				for _, p := range m.Parameters() {
					p.Grad.Zero()
				}
			}
			b.ReportMetric(float64(tc.batch*b.N)/b.Elapsed().Seconds(), "img/s")
		})
	}
}

// BenchmarkForwardNoGrad times the forward pass without gradient of
// CIFAR-stem ResNets in training mode (batch statistics), as D-SimCLR
// re-embeds its memory's samples every step.
func BenchmarkForwardNoGrad(b *testing.B) {
	for _, tc := range []struct {
		arch  string
		batch int
	}{{"resnet18-w16", 256}, {"resnet18", 32}} {
		b.Run(fmt.Sprintf("%s/b%d", tc.arch, tc.batch), func(b *testing.B) {
			m, in, a, _ := benchModel(b, tc.arch, tc.batch)
			for b.Loop() {
				a.Reset()
				m.Forward(nil, in)
			}
			b.ReportMetric(float64(tc.batch*b.N)/b.Elapsed().Seconds(), "img/s")
		})
	}
}

// benchModel returns arch with 10 classes on an arena, a random batch of
// 32x32 images and the random source that made it, and reports the
// benchmark's allocations.
func benchModel(b *testing.B, arch string, batch int) (*ResNet, *autograd.Var, *nn.Arena, *rand.Rand) {
	m, err := New(arch, Options{NumClasses: 10})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	x := tensor.New(batch, 3, 32, 32)
	nn.NormalInit(x, 1, r)
	a := nn.NewArena()
	m.UseArena(a)
	b.ReportAllocs()
	return m, autograd.NewVar(x, false), a, r
}
