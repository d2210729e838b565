package ssl

import (
	"math"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// TestStepsOnCUDA trains the methods whose networks need no convolution or
// BatchNorm backend (the MLP encoder without BatchNorm heads; Barlow Twins'
// projector has BatchNorm1d) for three steps on the GPU (skipped without
// one), its backend composing every layer, loss and optimizer step from its
// core operations: the first step's loss must be within deviceTol of the
// CPU's (later steps follow different float32 roundings into the memory
// policy's decisions, so only their finiteness is checked).
func TestStepsOnCUDA(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skip(err)
	}
	dev := tensor.Device("cuda:0")
	tb := newToy(16, 8)
	for _, name := range []string{"moco", "dmoco", "simclr", "dsimclr", "byol"} {
		t.Run(name, func(t *testing.T) {
			cfg := methodConfig(t, name, toyConfig(tb))
			cfg.NewEncoder, cfg.HeadBN = newMLPEncoder, false
			want := runOn(t, name, cfg, tensor.CPU, tb, 3)
			got := runOn(t, name, cfg, dev, tb, 3)
			if d := hostless.RelDiff(got.losses[:1], want.losses[:1]); d > deviceTol {
				t.Errorf("first loss %v, CPU %v (difference %g, want <= %g)", got.losses[0], want.losses[0], d, deviceTol)
			}
			for s, l := range got.losses {
				if math.IsNaN(float64(l)) || math.IsInf(float64(l), 0) {
					t.Errorf("step %d: loss %v", s, l)
				}
			}
			t.Logf("losses on %s %v, CPU %v", dev, got.losses, want.losses)
		})
	}
}
