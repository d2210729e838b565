package cuda

import (
	"testing"

	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/resnet"
	"github.com/duel-ssl/duel/tensor"
)

// BenchmarkOptimizerSteps times one SGD step with momentum and weight
// decay, and the zeroing of the gradients, over a ResNet-50's 161
// parameters (23.5M floats) on the GPU by device events: /multi with
// SGDSteps and ZeroAll (one launch each), /single with SGDStep and Fill
// per parameter (322 launches, as nn/optim runs them on a backend without
// tensor.MultiOptimizerBackend). It reports GB/s of the step's traffic (w,
// g and the buffer read, w and the buffer written, then g written: 24
// bytes an element). GPU only.
func BenchmarkOptimizerSteps(b *testing.B) {
	d := needGPU(b)
	be, err := newBackend(d, 256)
	if err != nil {
		b.Fatal(err)
	}
	model, err := resnet.New("resnet50", resnet.Options{NumClasses: 10, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	var w, g, buf []tensor.Operand
	total := 0
	for _, p := range nn.Parameters(model) {
		n := p.Value.Numel()
		total += n
		op := func() tensor.Operand { return tensor.Operand{Buf: be.Alloc(n), Shape: []int{n}, Strides: []int{1}} }
		w, g, buf = append(w, op()), append(g, op()), append(buf, op())
	}
	a := tensor.SGDArgs{LR: 0.1, Momentum: 0.9, WeightDecay: 5e-4}
	report := func(b *testing.B, step func()) {
		per := deviceLoop(b, d, step)
		b.ReportMetric(24*float64(total)/per.Seconds()/1e9, "GB/s")
		b.ReportMetric(float64(per.Microseconds()), "us/op(device)")
	}
	b.Run("multi", func(b *testing.B) {
		report(b, func() {
			be.SGDSteps(w, g, buf, a)
			be.ZeroAll(g)
		})
	})
	b.Run("single", func(b *testing.B) {
		report(b, func() {
			for i := range w {
				be.SGDStep(w[i], g[i], buf[i], a)
				be.Fill(g[i], 0)
			}
		})
	})
}
