package ssl

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/heads"
	"github.com/duel-ssl/duel/nn/loss"
	"github.com/duel-ssl/duel/tensor"
)

func init() {
	Register("dsimclr", Info{
		Memory: true, Contrastive: true,
		Negatives: NegMixed, Policy: "duel", MemNegatives: 256,
		Summary: "D-SimCLR: SimCLR plus negatives re-embedded from a DUEL memory of samples",
	}, func(cfg Config) (Method, error) { return newDSimCLR(cfg) })
}

// DSimCLR is the paper's D-SimCLR (Appendix E.1): SimCLR whose NT-Xent
// denominators also hold MemNegatives samples drawn from an active memory.
// The memory holds sample ids (and, for its policy, the features of the
// target view when they entered); the drawn samples are fetched by id from
// the dataset (Config.Images) and re-embedded by the current encoder and
// projector without gradient (stop-gradient, training-mode BatchNorm).
// Negatives "batch" is SimCLR with the memory kept for its metrics only,
// "memory" drops the batch negatives, "mixed" (the paper's choice) uses both.
type DSimCLR struct {
	cfg  Config
	enc  Encoder
	proj *heads.MLP
	mem  *memory.Memory
	g    group

	rows []float32 // the target view's projections, on the host (memory input)
	imgs []float32 // the re-embedded samples' images
}

func newDSimCLR(cfg Config) (*DSimCLR, error) {
	if cfg.Images == nil && cfg.Negatives != NegBatch {
		return nil, fmt.Errorf("no image source to re-embed the memory's samples")
	}
	s, err := newSimCLR(cfg)
	if err != nil {
		return nil, err
	}
	mem, err := newMemory(cfg, cfg.ProjDim)
	if err != nil {
		return nil, err
	}
	return &DSimCLR{cfg: cfg, enc: s.enc, proj: s.proj, mem: mem, g: s.g}, nil
}

// Name returns "dsimclr".
func (m *DSimCLR) Name() string { return "dsimclr" }

// Encoder returns the encoder.
func (m *DSimCLR) Encoder() Encoder { return m.enc }

// Parts returns the encoder and the projector.
func (m *DSimCLR) Parts() []Part { return []Part{{"", m.enc}, {"projector", m.proj}} }

// Parameters returns the encoder's and projector's parameters.
func (m *DSimCLR) Parameters() []*autograd.Var {
	return append(nn.Parameters(m.enc), nn.Parameters(m.proj)...)
}

// Memory returns the active memory.
func (m *DSimCLR) Memory() *memory.Memory { return m.mem }

// Loss is NT-Xent of the two views with the re-embedded memory samples as
// extra negatives, on the model's device: the views and the fetched images
// are copied in, the target view's projections copied out to the host for
// the memory (Update).
func (m *DSimCLR) Loss(tp *autograd.Tape, b *Batch) (*autograd.Var, error) {
	dev := deviceOf(m.enc)
	x1, x2, err := inputs(b, dev)
	if err != nil {
		return nil, fmt.Errorf("dsimclr: %w", err)
	}
	z1, z2, err := embedPair(tp, m.g, m.enc, m.proj, x1, x2, len(b.IDs))
	if err != nil {
		return nil, fmt.Errorf("dsimclr: %w", err)
	}
	if m.rows, err = toHost(m.rows, z1.Value); err != nil {
		return nil, fmt.Errorf("dsimclr: %w", err)
	}
	var neg *autograd.Var
	if m.cfg.Negatives != NegBatch {
		if neg, err = m.negatives(b, dev); err != nil {
			return nil, err
		}
	}
	return loss.NTXent(tp, z1, z2, neg, loss.ContrastiveOptions{
		Tau: m.cfg.Tau, Eps: m.cfg.Eps,
		BatchNegatives: m.cfg.Negatives != NegMemory || neg == nil,
	}), nil
}

// negatives draws MemNegatives samples from the memory and embeds them with
// the current networks on dev, without gradient. Fewer than two samples
// held (the first step) gives none: BatchNorm needs two.
func (m *DSimCLR) negatives(b *Batch, dev tensor.Device) (*autograd.Var, error) {
	k := m.mem.Len()
	if k < 2 {
		return nil, nil
	}
	idx := pickRows(k, m.cfg.MemNegatives, m.cfg.Seed, b.Step)
	if err := m.mem.CountNegatives(idx); err != nil {
		return nil, err
	}
	all := m.mem.IDs()
	ids := make([]int64, len(idx))
	for i, p := range idx {
		ids[i] = all[p]
	}
	shape := slices.Clone(b.Views[0].Shape())
	shape[0] = len(ids)
	per := b.Views[0].Numel() / b.Views[0].Dim(0)
	if cap(m.imgs) < len(ids)*per {
		m.imgs = make([]float32, len(ids)*per)
	}
	m.imgs = m.imgs[:len(ids)*per]
	if err := m.cfg.Images.Fetch(m.imgs, ids, b.Step); err != nil {
		return nil, fmt.Errorf("dsimclr: fetching memory samples at step %d: %w", b.Step, err)
	}
	x, err := onDevice(tensor.FromSlice(m.imgs, shape...), dev)
	if err != nil {
		return nil, fmt.Errorf("dsimclr: memory samples: %w", err)
	}
	z, err := m.g.spread(x, m.embedConst)
	if err != nil {
		return nil, fmt.Errorf("dsimclr: memory samples: %w", err)
	}
	return autograd.Const(z), nil
}

// embedConst embeds x with the current networks, without gradient.
func (m *DSimCLR) embedConst(x *tensor.Tensor) (*tensor.Tensor, error) {
	return embed(nil, m.enc, m.proj, autograd.NewVar(x, false)).Value, nil
}

// Update offers the target view's projections to the memory, with their
// sample ids and labels: those computed in Loss, before the optimizer step,
// or (MemoryFrom "target", Algorithm 1 read literally) the target view
// re-encoded by the updated networks. With MemRefresh, the stalest rows
// held are then re-embedded by the updated networks. The encoding is on
// the model's device, the memory on the host.
func (m *DSimCLR) Update(b *Batch) error {
	dev := deviceOf(m.enc)
	rows := m.rows
	if m.cfg.MemoryFrom == "target" {
		x, err := onDevice(b.Views[0], dev)
		if err != nil {
			return fmt.Errorf("dsimclr memory update at step %d: %w", b.Step, err)
		}
		z, err := m.embedConst(x)
		if err == nil {
			z, err = m.g.gatherConst(z, len(b.IDs))
		}
		if err == nil {
			rows, err = toHost(nil, z)
		}
		if err != nil {
			return fmt.Errorf("dsimclr memory update at step %d: %w", b.Step, err)
		}
	}
	if _, err := m.mem.Add(rows, b.IDs, b.Labels, b.Step); err != nil {
		return fmt.Errorf("dsimclr memory update at step %d: %w", b.Step, err)
	}
	if m.cfg.MemRefresh > 0 {
		var err error
		m.imgs, err = refreshMemory(m.mem, m.cfg.MemRefresh, m.g.refreshGroups(m.cfg.BNSplits), m.cfg.Images, b.Views[0], b.Step, dev,
			func(x *tensor.Tensor) (*tensor.Tensor, error) { return m.g.spread(x, m.embedConst) }, m.imgs)
		if err != nil {
			return fmt.Errorf("dsimclr memory refresh at step %d: %w", b.Step, err)
		}
	}
	return nil
}
