package ssl

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/heads"
	"github.com/duel-ssl/duel/nn/loss"
	"github.com/duel-ssl/duel/tensor"
)

func init() {
	Register("byol", Info{
		Momentum:  true,
		Predictor: true,
		Summary:   "BYOL: online encoder, projector and predictor regress a momentum target's projections",
	}, func(cfg Config) (Method, error) { return newBYOL(cfg) })
}

// BYOL (Grill et al. 2020): the online network (encoder, projector
// Linear-[BN]-ReLU-Linear of width ProjHidden, predictor of width PredHidden)
// predicts the target network's projection of the other view; the target is
// a momentum (EMA) copy of the online encoder and projector and gets no
// gradient. The loss is symmetric: BYOL(p1, z2') + BYOL(p2, z1').
type BYOL struct {
	cfg              Config
	enc, tenc        Encoder
	proj, tprj, pred *heads.MLP
	g                group
}

func newBYOL(cfg Config) (*BYOL, error) {
	enc, err := cfg.NewEncoder()
	if err != nil {
		return nil, err
	}
	hidden := cfg.ProjHidden
	if hidden == 0 {
		hidden = cfg.ProjDim
	}
	pspec := heads.BYOLProjector(enc.FeatureDim(), hidden, cfg.ProjDim, cfg.HeadBN)
	proj, err := newHead(pspec, cfg.Seed, tagProjector)
	if err != nil {
		return nil, err
	}
	predHidden := cfg.PredHidden
	if predHidden == 0 {
		predHidden = hidden
	}
	pred, err := newHead(heads.BYOLPredictor(cfg.ProjDim, predHidden, cfg.HeadBN), cfg.Seed, tagPredictor)
	if err != nil {
		return nil, err
	}
	tenc, err := copyOf(enc, cfg.NewEncoder)
	if err != nil {
		return nil, err
	}
	tprj, err := copyOf(proj, func() (*heads.MLP, error) { return newHead(pspec, cfg.Seed, tagProjector) })
	if err != nil {
		return nil, err
	}
	for _, p := range append(nn.Parameters(tenc), nn.Parameters(tprj)...) {
		p.RequiresGrad = false
	}
	g := groupOf(cfg)
	setBNSplits(enc, g.localSplits(cfg.BNSplits))
	setBNSplits(tenc, g.localSplits(cfg.BNSplits))
	return &BYOL{cfg: cfg, enc: enc, tenc: tenc, proj: proj, tprj: tprj, pred: pred, g: g}, nil
}

// Name returns "byol".
func (m *BYOL) Name() string { return "byol" }

// Encoder returns the online encoder.
func (m *BYOL) Encoder() Encoder { return m.enc }

// Parts returns the online encoder, projector and predictor, then the
// target encoder and projector.
func (m *BYOL) Parts() []Part {
	return []Part{{"", m.enc}, {"projector", m.proj}, {"predictor", m.pred},
		{"target_encoder", m.tenc}, {"target_projector", m.tprj}}
}

// Parameters returns the online networks' parameters.
func (m *BYOL) Parameters() []*autograd.Var {
	ps := append(nn.Parameters(m.enc), nn.Parameters(m.proj)...)
	return append(ps, nn.Parameters(m.pred)...)
}

// Memory returns nil: BYOL has no memory.
func (m *BYOL) Memory() *memory.Memory { return nil }

// Loss is the symmetric BYOL loss, on the model's device (the views are
// copied in).
func (m *BYOL) Loss(tp *autograd.Tape, b *Batch) (*autograd.Var, error) {
	x1, x2, err := inputs(b, deviceOf(m.enc))
	if err != nil {
		return nil, fmt.Errorf("byol: %w", err)
	}
	n := len(b.IDs)
	var p [2]*autograd.Var
	var t [2]*tensor.Tensor
	for i, x := range []*autograd.Var{x1, x2} {
		if p[i], err = m.g.gather(tp, m.pred.Forward(tp, m.proj.Forward(tp, m.enc.Features(tp, x))), n); err != nil {
			return nil, fmt.Errorf("byol: %w", err)
		}
	}
	for i, x := range []*autograd.Var{x1, x2} {
		if t[i], err = m.g.gatherConst(m.tprj.Forward(nil, m.tenc.Features(nil, x)).Value, n); err != nil {
			return nil, fmt.Errorf("byol: %w", err)
		}
	}
	p1, p2, t1, t2 := p[0], p[1], autograd.Const(t[0]), autograd.Const(t[1])
	return autograd.Add(tp, loss.BYOL(tp, p1, t2), loss.BYOL(tp, p2, t1)), nil
}

// Update moves the target networks towards the online ones.
func (m *BYOL) Update(*Batch) error {
	emaUpdate(m.tenc, m.enc, m.cfg.EMA)
	emaUpdate(m.tprj, m.proj, m.cfg.EMA)
	return nil
}
