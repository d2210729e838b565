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
	Register("moco", Info{
		Memory: true, Momentum: true, Contrastive: true,
		Negatives: NegMemory, Policy: "fifo",
		Summary: "MoCo v2: query encoder, momentum key encoder, FIFO queue of keys as negatives, InfoNCE",
	}, func(cfg Config) (Method, error) { return newMoCo("moco", cfg) })
}

// MoCo is MoCo v2 (He et al. 2020, Chen et al. 2020) with the memory
// policy of its configuration: a FIFO queue for "moco", the DUEL policy for
// "dmoco" (see dmoco.go). The query view goes through the encoder and the
// projector; the key view through their momentum copies without gradient;
// the loss is the paper's InfoNCE (Eq. 17) of the query against its key and
// the negatives (memory rows, other keys of the batch, or both).
//
// On one machine MoCo's shuffle BN becomes split ("ghost") BatchNorm with
// BNSplits groups in both encoders, the key batch being shuffled across the
// groups before the key encoder and restored after it (ShuffleBN), so a
// query and its key are never normalised with the same group statistics.
type MoCo struct {
	name       string
	cfg        Config
	enc, kenc  Encoder
	proj, kprj *heads.MLP
	mem        *memory.Memory
	g          group

	keys []float32 // the keys of the current step, on the host (memory input)
	imgs []float32 // images of the memory rows refreshed
}

func newMoCo(name string, cfg Config) (*MoCo, error) {
	enc, err := cfg.NewEncoder()
	if err != nil {
		return nil, err
	}
	proj, err := newHead(projectorSpec(cfg, enc.FeatureDim()), cfg.Seed, tagProjector)
	if err != nil {
		return nil, err
	}
	kenc, err := copyOf(enc, cfg.NewEncoder)
	if err != nil {
		return nil, err
	}
	kprj, err := copyOf(proj, func() (*heads.MLP, error) { return newHead(proj.Spec, cfg.Seed, tagProjector) })
	if err != nil {
		return nil, err
	}
	for _, p := range append(nn.Parameters(kenc), nn.Parameters(kprj)...) {
		p.RequiresGrad = false
	}
	g := groupOf(cfg)
	setBNSplits(enc, g.localSplits(cfg.BNSplits))
	setBNSplits(kenc, g.localSplits(cfg.BNSplits))
	mem, err := newMemory(cfg, cfg.ProjDim)
	if err != nil {
		return nil, err
	}
	return &MoCo{name: name, cfg: cfg, enc: enc, kenc: kenc, proj: proj, kprj: kprj, mem: mem, g: g}, nil
}

// Name returns "moco" or "dmoco".
func (m *MoCo) Name() string { return m.name }

// Encoder returns the query encoder, the one being trained.
func (m *MoCo) Encoder() Encoder { return m.enc }

// Parts returns the encoder, projector, key_encoder and key_projector.
func (m *MoCo) Parts() []Part {
	return []Part{{"", m.enc}, {"projector", m.proj}, {"key_encoder", m.kenc}, {"key_projector", m.kprj}}
}

// Parameters returns the query encoder's and projector's parameters.
func (m *MoCo) Parameters() []*autograd.Var {
	return append(nn.Parameters(m.enc), nn.Parameters(m.proj)...)
}

// Memory returns the queue (moco) or the DUEL memory (dmoco).
func (m *MoCo) Memory() *memory.Memory { return m.mem }

// Loss is InfoNCE(q, k, negatives) with q the normalised projection of
// view 0 and k the momentum encoding of view 1, on the model's device
// (the device of the query encoder's parameters): the views are copied in,
// the keys copied out to the host for the memory (Update), and the memory
// rows drawn as negatives copied in.
func (m *MoCo) Loss(tp *autograd.Tape, b *Batch) (*autograd.Var, error) {
	dev := deviceOf(m.enc)
	x, err := onDevice(b.Views[0], dev)
	if err != nil {
		return nil, fmt.Errorf("%s queries: %w", m.name, err)
	}
	n := len(b.IDs)
	q, err := m.g.gather(tp, embed(tp, m.enc, m.proj, autograd.NewVar(x, false)), n)
	if err != nil {
		return nil, fmt.Errorf("%s queries: %w", m.name, err)
	}
	k, err := m.keyEmbed(b.Views[1], n, b.Step, 0, dev)
	if err != nil {
		return nil, err
	}
	if m.keys, err = toHost(m.keys, k); err != nil {
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	var neg *autograd.Var
	if m.cfg.Negatives != NegBatch {
		if neg, err = memoryNegatives(m.mem, m.cfg.MemNegatives, m.cfg.Seed, b.Step, dev); err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
	}
	// With an empty memory (the first step) the batch supplies the negatives.
	batchNeg := m.cfg.Negatives != NegMemory || neg == nil
	return loss.InfoNCE(tp, q, autograd.Const(k), neg, loss.ContrastiveOptions{
		Tau: m.cfg.Tau, Eps: m.cfg.Eps, BatchNegatives: batchNeg,
	}), nil
}

// keyEmbed encodes the images x of this rank's shard of a global batch of
// n (copied in to dev unless they are there) with the key encoder on dev,
// without gradient, and returns the keys of the whole global batch (see
// keyEmbedAll).
func (m *MoCo) keyEmbed(x *tensor.Tensor, n, step, pass int, dev tensor.Device) (*tensor.Tensor, error) {
	x, err := onDevice(x, dev)
	if err != nil {
		return nil, fmt.Errorf("%s keys: %w", m.name, err)
	}
	if !m.shuffles() {
		k, err := m.g.gatherConst(embed(nil, m.kenc, m.kprj, autograd.NewVar(x, false)).Value.Contiguous(), n)
		if err != nil {
			return nil, fmt.Errorf("%s keys: %w", m.name, err)
		}
		return k, nil
	}
	all, err := m.g.gatherConst(x, n)
	if err != nil {
		return nil, fmt.Errorf("%s key images: %w", m.name, err)
	}
	return m.keyEmbedAll(all, step, pass)
}

// shuffles reports whether the key batch is shuffled across the
// BatchNorm groups.
func (m *MoCo) shuffles() bool { return m.cfg.ShuffleBN && m.cfg.BNSplits > 1 }

// keyEmbedAll encodes the global batch x (on the model's device) with the
// key encoder, without gradient, shuffling the batch across the BatchNorm
// groups when ShuffleBN is set; each rank encodes its rows of the
// (shuffled) batch and the keys are gathered.
func (m *MoCo) keyEmbedAll(x *tensor.Tensor, step, pass int) (*tensor.Tensor, error) {
	enc := func(local *tensor.Tensor) (*tensor.Tensor, error) {
		return embed(nil, m.kenc, m.kprj, autograd.NewVar(local, false)).Value.Contiguous(), nil
	}
	if !m.shuffles() {
		return m.g.spread(x, enc)
	}
	perm := shufflePerm(x.Dim(0), m.cfg.Seed, step, pass)
	k, err := m.g.spread(permute(x, perm), enc)
	if err != nil {
		return nil, fmt.Errorf("%s keys: %w", m.name, err)
	}
	// Row i of k is sample perm[i]: put it back at perm[i].
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[p] = i
	}
	return permute(k, inv), nil
}

// Update moves the key networks towards the query networks, then offers the
// keys to the memory: this step's keys, or (MemoryFrom "target", the paper's
// Algorithm 3) the target view re-encoded by the updated key encoder. With
// MemRefresh, the stalest rows held are then re-encoded by the updated key
// encoder from their images. The encoding is on the model's device, the
// memory on the host.
func (m *MoCo) Update(b *Batch) error {
	emaUpdate(m.kenc, m.enc, m.cfg.EMA)
	emaUpdate(m.kprj, m.proj, m.cfg.EMA)
	dev := deviceOf(m.enc)
	rows := m.keys
	if m.cfg.MemoryFrom == "target" {
		k, err := m.keyEmbed(b.Views[0], len(b.IDs), b.Step, 1, dev)
		if err != nil {
			return err
		}
		if rows, err = toHost(nil, k); err != nil {
			return fmt.Errorf("%s memory update at step %d: %w", m.name, b.Step, err)
		}
	}
	if _, err := m.mem.Add(rows, b.IDs, b.Labels, b.Step); err != nil {
		return fmt.Errorf("%s memory update at step %d: %w", m.name, b.Step, err)
	}
	if m.cfg.MemRefresh > 0 {
		var err error
		m.imgs, err = refreshMemory(m.mem, m.cfg.MemRefresh, m.g.refreshGroups(m.cfg.BNSplits), m.cfg.Images, b.Views[1], b.Step, dev,
			func(x *tensor.Tensor) (*tensor.Tensor, error) { return m.keyEmbedAll(x, b.Step, 2) }, m.imgs)
		if err != nil {
			return fmt.Errorf("%s memory refresh at step %d: %w", m.name, b.Step, err)
		}
	}
	return nil
}
