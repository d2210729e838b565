package ssl

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/splitmix"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/heads"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
)

// Stream tags keep the random draws of different purposes independent.
const (
	tagProjector = 1 + iota
	tagPredictor
	tagShuffle
	tagMemNegatives
	tagPolicy
)

// newHead builds a head from spec with weights drawn from a stream of seed.
func newHead(spec heads.Spec, seed uint64, tag uint64) (*heads.MLP, error) {
	return heads.NewMLP(spec, rand.New(rand.NewPCG(seed, tag)))
}

// projectorSpec is the contrastive methods' projector: the paper's single
// Linear layer (ProjHidden 0) or MoCo v2's Linear-ReLU-Linear.
func projectorSpec(cfg Config, in int) heads.Spec {
	if cfg.ProjHidden == 0 {
		return heads.Linear(in, cfg.ProjDim)
	}
	return heads.MoCoV2(in, cfg.ProjHidden, cfg.ProjDim)
}

// copyOf builds a second module with make and loads src's state into it:
// the initial momentum copy of a network (MoCo's key encoder, BYOL's target).
func copyOf[M nn.Module](src M, make func() (M, error)) (M, error) {
	dst, err := make()
	if err != nil {
		return dst, err
	}
	if err := nn.LoadStateDict(dst, nn.StateDictOf(src), true); err != nil {
		return dst, fmt.Errorf("copying the network: %w", err)
	}
	return dst, nil
}

// emaUpdate moves every target parameter towards its online twin:
// t = m*t + (1-m)*o (MoCo's momentum update, BYOL's target update).
// Buffers are not averaged: the target's BatchNorm keeps its own running
// statistics, as in MoCo's and BYOL's reference code.
func emaUpdate(target, online nn.Module, m float64) {
	optim.EMA(nn.Parameters(target), nn.Parameters(online), m)
}

// setBNSplits makes every BatchNorm of m a ghost BatchNorm of s groups.
func setBNSplits(m nn.Module, s int) {
	for _, nm := range nn.Modules(m) {
		if bn, ok := nm.Module.(*nn.BatchNorm); ok {
			bn.Splits = max(s, 1)
		}
	}
}

// newMemory builds the active memory of cfg for rows of z values.
func newMemory(cfg Config, z int) (*memory.Memory, error) {
	var pol memory.Policy
	if cfg.Policy == "duel" && cfg.Admission != "" {
		adm, err := memory.ParseAdmission(cfg.Admission)
		if err != nil {
			return nil, err
		}
		pol = memory.NewDUEL(adm)
	} else {
		var err error
		if pol, err = memory.NewPolicy(cfg.Policy, splitmix.Derive(cfg.Seed, tagPolicy)); err != nil {
			return nil, err
		}
	}
	return memory.New(cfg.MemorySize, z, pol, memory.WithSafeUpdate(cfg.SafeUpdate), memory.WithMaxAge(cfg.MaxAge))
}

// pickRows returns n distinct positions in [0, k) drawn for step (all of
// them, in order, when n is 0 or at least k).
func pickRows(k, n int, seed uint64, step int) []int {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	if n == 0 || n >= k {
		return idx
	}
	r := splitmix.New(splitmix.Derive(seed, tagMemNegatives, uint64(step)))
	for i := 0; i < n; i++ {
		j := i + r.Intn(k-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:n]
}

// memoryNegatives returns the memory rows used as negatives at step (a
// constant: no gradient flows into the memory), or nil when the memory is
// empty.
func memoryNegatives(mem *memory.Memory, n int, seed uint64, step int) *autograd.Var {
	k, z := mem.Len(), mem.Dim()
	if k == 0 {
		return nil
	}
	rows := mem.Rows()
	if n == 0 || n >= k {
		// The memory changes only in Update, after the backward pass.
		mem.CountNegatives(nil)
		return autograd.Const(tensor.FromSlice(rows[:k*z], k, z))
	}
	idx := pickRows(k, n, seed, step)
	mem.CountNegatives(idx) // positions from pickRows are in range
	out := make([]float32, len(idx)*z)
	for i, p := range idx {
		copy(out[i*z:(i+1)*z], rows[p*z:(p+1)*z])
	}
	return autograd.Const(tensor.FromSlice(out, len(idx), z))
}

// embed runs encoder and head on x and L2-normalises the result.
func embed(tp *autograd.Tape, enc Encoder, head nn.Module, x *autograd.Var) *autograd.Var {
	return autograd.L2Normalize(tp, head.Forward(tp, enc.Features(tp, x)), 1)
}

// rowsOf copies the values of a (N, D) variable into dst (grown as needed).
func rowsOf(dst []float32, v *autograd.Var) []float32 {
	t := v.Value
	if !t.IsContiguous() {
		t = t.Contiguous()
	}
	return append(dst[:0], t.Data()...)
}

// permute returns the rows of x (N, ...) in the order perm: row i of the
// result is row perm[i] of x. buf is reused when large enough.
func permute(x *tensor.Tensor, perm []int, buf []float32) (*tensor.Tensor, []float32) {
	n := x.Dim(0)
	per := x.Numel() / max(n, 1)
	src := x.Contiguous().Data()
	if cap(buf) < len(src) {
		buf = make([]float32, len(src))
	}
	buf = buf[:len(src)]
	for i, p := range perm {
		copy(buf[i*per:(i+1)*per], src[p*per:(p+1)*per])
	}
	return tensor.FromSlice(buf, x.Shape()...), buf
}

// shufflePerm draws the permutation of the key batch of step.
func shufflePerm(n int, seed uint64, step, pass int) []int {
	r := splitmix.New(splitmix.Derive(seed, tagShuffle, uint64(step), uint64(pass)))
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := r.Intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// refreshMemory re-embeds the n rows of mem whose features are the oldest
// (memory.Stalest) and writes the new features back (memory.Refresh): their
// images are fetched by sample id from images (a fresh view, drawn for
// step) and embedded by embedFn without gradient. view is a training view
// (its shape gives C x H x W). The count is rounded down to a multiple of
// groups (the BatchNorm groups of the encoder) and nothing happens below two
// rows per group. buf is reused and returned.
func refreshMemory(mem *memory.Memory, n, groups int, images ImageSource, view *tensor.Tensor, step int,
	embedFn func(x *tensor.Tensor) *tensor.Tensor, buf []float32) ([]float32, error) {
	groups = max(groups, 1)
	n = min(n, mem.Len()) / groups * groups
	if n < 2*groups {
		return buf, nil
	}
	pos := mem.Stalest(n)
	all := mem.IDs()
	ids := make([]int64, len(pos))
	for i, p := range pos {
		ids[i] = all[p]
	}
	shape := slices.Clone(view.Shape())
	shape[0] = len(ids)
	per := view.Numel() / view.Dim(0)
	if cap(buf) < len(ids)*per {
		buf = make([]float32, len(ids)*per)
	}
	buf = buf[:len(ids)*per]
	if err := images.Fetch(buf, ids, step); err != nil {
		return buf, fmt.Errorf("fetching %d memory samples to refresh: %w", len(ids), err)
	}
	rows := embedFn(tensor.FromSlice(buf, shape...)).Contiguous().Data()
	if err := mem.Refresh(pos, rows, step); err != nil {
		return buf, err
	}
	return buf, nil
}
