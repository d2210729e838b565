package ssl

import (
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
)

// BenchmarkStep times one training step (loss, backward, Adam, update) of
// every method on the toy problem (resnet18-w4, 8x8 images, batch 8).
// Compare the methods with each other: SimCLR is the peer (two views with
// gradients); MoCo saves one backward pass; D-SimCLR adds the re-embedded
// memory negatives; BYOL adds two target forward passes.
//
//	go test -run '^$' -bench Step ./duel/ssl
func BenchmarkStep(b *testing.B) {
	tb := newToy(64, 8)
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			t := &testing.T{}
			m, err := New(name, methodConfig(t, name, toyConfig(tb)))
			if err != nil {
				b.Fatal(err)
			}
			opt, err := optim.NewAdam(m.Parameters(), optim.AdamConfig{LR: 1e-3})
			if err != nil {
				b.Fatal(err)
			}
			arena := nn.NewArena()
			for _, p := range m.Parts() {
				nn.UseArena(p.Module, arena)
			}
			batches := make([]*Batch, 8)
			for i := range batches {
				batches[i] = tb.batch(i)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				bt := batches[i%len(batches)]
				bt.Step = i
				arena.Reset()
				tp := autograd.NewTape()
				l, err := m.Loss(tp, bt)
				if err != nil {
					b.Fatal(err)
				}
				tp.Backward(l)
				opt.Step()
				opt.ZeroGrad()
				if err := m.Update(bt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(8*b.N)/b.Elapsed().Seconds(), "img/s")
		})
	}
}
