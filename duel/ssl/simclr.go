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
	Register("simclr", Info{
		Contrastive: true, Negatives: NegBatch,
		Summary: "SimCLR: one encoder and projector for both views, NT-Xent with the batch as negatives",
	}, func(cfg Config) (Method, error) { return newSimCLR(cfg) })
}

// SimCLR (Chen et al. 2020) encodes both views with the same encoder and
// projector and applies NT-Xent: each of the 2N normalised projections has
// the other view of its image as positive and the 2N-2 other projections as
// negatives, with the paper's ε in the denominator (Eq. 17).
type SimCLR struct {
	cfg  Config
	enc  Encoder
	proj *heads.MLP
	g    group
}

func newSimCLR(cfg Config) (*SimCLR, error) {
	enc, err := cfg.NewEncoder()
	if err != nil {
		return nil, err
	}
	proj, err := newHead(projectorSpec(cfg, enc.FeatureDim()), cfg.Seed, tagProjector)
	if err != nil {
		return nil, err
	}
	g := groupOf(cfg)
	setBNSplits(enc, g.localSplits(cfg.BNSplits))
	return &SimCLR{cfg: cfg, enc: enc, proj: proj, g: g}, nil
}

// Name returns "simclr".
func (m *SimCLR) Name() string { return "simclr" }

// Encoder returns the encoder.
func (m *SimCLR) Encoder() Encoder { return m.enc }

// Parts returns the encoder and the projector.
func (m *SimCLR) Parts() []Part { return []Part{{"", m.enc}, {"projector", m.proj}} }

// Parameters returns the encoder's and projector's parameters.
func (m *SimCLR) Parameters() []*autograd.Var {
	return append(nn.Parameters(m.enc), nn.Parameters(m.proj)...)
}

// Memory returns nil: SimCLR has no memory.
func (m *SimCLR) Memory() *memory.Memory { return nil }

// Loss is NT-Xent of the two views' normalised projections, on the
// model's device (the views are copied in).
func (m *SimCLR) Loss(tp *autograd.Tape, b *Batch) (*autograd.Var, error) {
	x1, x2, err := inputs(b, deviceOf(m.enc))
	if err != nil {
		return nil, fmt.Errorf("simclr: %w", err)
	}
	z1, z2, err := embedPair(tp, m.g, m.enc, m.proj, x1, x2, len(b.IDs))
	if err != nil {
		return nil, fmt.Errorf("simclr: %w", err)
	}
	return loss.NTXent(tp, z1, z2, nil, loss.ContrastiveOptions{
		Tau: m.cfg.Tau, Eps: m.cfg.Eps, BatchNegatives: true,
	}), nil
}

// embedPair embeds this rank's shards x1 and x2 of the two views and
// gathers the n rows of each view's global batch.
func embedPair(tp *autograd.Tape, g group, enc Encoder, head nn.Module, x1, x2 *autograd.Var, n int) (z1, z2 *autograd.Var, err error) {
	if z1, err = g.gather(tp, embed(tp, enc, head, x1), n); err != nil {
		return nil, nil, err
	}
	if z2, err = g.gather(tp, embed(tp, enc, head, x2), n); err != nil {
		return nil, nil, err
	}
	return z1, z2, nil
}

// Update does nothing: SimCLR has neither momentum networks nor memory.
func (m *SimCLR) Update(*Batch) error { return nil }
