package ssl

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/heads"
	"github.com/duel-ssl/duel/nn/loss"
)

func init() {
	Register("barlow", Info{
		Summary: "Barlow Twins: the cross-correlation of the two views' projections is driven to the identity",
	}, func(cfg Config) (Method, error) { return newBarlow(cfg) })
}

// Barlow is Barlow Twins (Zbontar et al. 2021): both views go through the
// encoder and a projector of three bias-free Linear layers (BatchNorm1d and
// ReLU after the first two, width ProjHidden, output ProjDim); the loss
// drives the cross-correlation of the batch-normalised projections to the
// identity, off-diagonal terms weighted by BarlowLambda (5e-3 in the paper).
type Barlow struct {
	cfg  Config
	enc  Encoder
	proj *heads.MLP
	g    group
}

func newBarlow(cfg Config) (*Barlow, error) {
	enc, err := cfg.NewEncoder()
	if err != nil {
		return nil, err
	}
	hidden := cfg.ProjHidden
	if hidden == 0 {
		hidden = cfg.ProjDim
	}
	proj, err := newHead(heads.Barlow(enc.FeatureDim(), hidden, cfg.ProjDim), cfg.Seed, tagProjector)
	if err != nil {
		return nil, err
	}
	if cfg.BarlowLambda == 0 {
		cfg.BarlowLambda = loss.DefaultBarlowLambda
	}
	g := groupOf(cfg)
	setBNSplits(enc, g.localSplits(cfg.BNSplits))
	return &Barlow{cfg: cfg, enc: enc, proj: proj, g: g}, nil
}

// Name returns "barlow".
func (m *Barlow) Name() string { return "barlow" }

// Encoder returns the encoder.
func (m *Barlow) Encoder() Encoder { return m.enc }

// Parts returns the encoder and the projector.
func (m *Barlow) Parts() []Part { return []Part{{"", m.enc}, {"projector", m.proj}} }

// Parameters returns the encoder's and projector's parameters.
func (m *Barlow) Parameters() []*autograd.Var {
	return append(nn.Parameters(m.enc), nn.Parameters(m.proj)...)
}

// Memory returns nil: Barlow Twins has no memory.
func (m *Barlow) Memory() *memory.Memory { return nil }

// Loss is the Barlow Twins loss of the two views' projections, on the
// model's device (the views are copied in).
func (m *Barlow) Loss(tp *autograd.Tape, b *Batch) (*autograd.Var, error) {
	x1, x2, err := inputs(b, deviceOf(m.enc))
	if err != nil {
		return nil, fmt.Errorf("barlow: %w", err)
	}
	n := len(b.IDs)
	z1, err := m.g.gather(tp, m.proj.Forward(tp, m.enc.Features(tp, x1)), n)
	if err != nil {
		return nil, fmt.Errorf("barlow: %w", err)
	}
	z2, err := m.g.gather(tp, m.proj.Forward(tp, m.enc.Features(tp, x2)), n)
	if err != nil {
		return nil, fmt.Errorf("barlow: %w", err)
	}
	return loss.BarlowTwins(tp, z1, z2, m.cfg.BarlowLambda), nil
}

// Update does nothing: Barlow Twins has neither momentum networks nor memory.
func (m *Barlow) Update(*Batch) error { return nil }
