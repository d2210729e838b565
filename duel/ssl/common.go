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
	if cfg.Policy == "duel" {
		adm := memory.Protected // the registry's "duel"
		if cfg.Admission != "" {
			var err error
			if adm, err = memory.ParseAdmission(cfg.Admission); err != nil {
				return nil, err
			}
		}
		if cfg.DUELPolicy != nil {
			pol = cfg.DUELPolicy(adm)
		}
		if pol == nil {
			pol = memory.NewDUEL(adm)
		}
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

// memoryNegatives returns the memory rows used as negatives at step on
// dev (a constant: no gradient flows into the memory), or nil when the
// memory is empty. The memory lives on the host (its policy decides there);
// the rows drawn are copied in to dev each step (no copy on the CPU, where
// the tensor shares the memory's rows).
func memoryNegatives(mem *memory.Memory, n int, seed uint64, step int, dev tensor.Device) (*autograd.Var, error) {
	k, z := mem.Len(), mem.Dim()
	if k == 0 {
		return nil, nil
	}
	rows := mem.Rows()
	var host *tensor.Tensor
	if n == 0 || n >= k {
		// The memory changes only in Update, after the backward pass.
		mem.CountNegatives(nil)
		host = tensor.FromSlice(rows[:k*z], k, z)
	} else {
		idx := pickRows(k, n, seed, step)
		mem.CountNegatives(idx) // positions from pickRows are in range
		out := make([]float32, len(idx)*z)
		for i, p := range idx {
			copy(out[i*z:(i+1)*z], rows[p*z:(p+1)*z])
		}
		host = tensor.FromSlice(out, len(idx), z)
	}
	neg, err := onDevice(host, dev)
	if err != nil {
		return nil, fmt.Errorf("memory negatives: %w", err)
	}
	return autograd.Const(neg), nil
}

// embed runs encoder and head on x and L2-normalises the result.
func embed(tp *autograd.Tape, enc Encoder, head nn.Module, x *autograd.Var) *autograd.Var {
	return autograd.L2Normalize(tp, head.Forward(tp, enc.Features(tp, x)), 1)
}

// deviceOf returns the device of m's parameters (the model's device): that
// of the first one in registration order, the CPU for a module without
// parameters. It stops at the first parameter instead of listing them all.
func deviceOf(m nn.Module) tensor.Device {
	if d, ok := firstParamDevice(m); ok {
		return d
	}
	return tensor.CPU
}

// firstParamDevice returns the device of m's first parameter, depth first.
func firstParamDevice(m nn.Module) (tensor.Device, bool) {
	for _, mb := range m.Members() {
		if mb.Param != nil {
			return mb.Param.Value.Device(), true
		}
		if mb.Module != nil {
			if d, ok := firstParamDevice(mb.Module); ok {
				return d, true
			}
		}
	}
	return "", false
}

// onDevice returns x on dev: x itself when it is there already (a host
// batch on the CPU), else a copy.
func onDevice(x *tensor.Tensor, dev tensor.Device) (*tensor.Tensor, error) {
	y, err := x.To(dev)
	if err != nil {
		return nil, fmt.Errorf("moving %v to the model's device: %w", x.Shape(), err)
	}
	return y, nil
}

// inputs returns the two views of b on dev, as inputs without gradient.
func inputs(b *Batch, dev tensor.Device) (x1, x2 *autograd.Var, err error) {
	var v [2]*tensor.Tensor
	for i, x := range b.Views {
		if v[i], err = onDevice(x, dev); err != nil {
			return nil, nil, fmt.Errorf("view %d: %w", i, err)
		}
	}
	return autograd.NewVar(v[0], false), autograd.NewVar(v[1], false), nil
}

// toHost copies the values of a (N, D) tensor on any device into dst
// (grown as needed) and returns it. It is the one place where the methods
// read features on the host, for the memory, whose policy decides there:
// on the CPU a copy of the tensor's slice, elsewhere the backend's CopyOut
// (Tensor.To(tensor.CPU)).
func toHost(dst []float32, t *tensor.Tensor) ([]float32, error) {
	h, err := t.To(tensor.CPU)
	if err != nil {
		return dst, fmt.Errorf("copying features to the host for the memory: %w", err)
	}
	return append(dst[:0], h.Contiguous().Data()...), nil
}

// permute returns the rows of x (N, ...) in the order perm, on x's device:
// row i of the result is row perm[i] of x.
func permute(x *tensor.Tensor, perm []int) *tensor.Tensor {
	rows := make([]*tensor.Tensor, len(perm))
	for i, p := range perm {
		rows[i] = x.Slice(0, p, p+1)
	}
	return tensor.Concat(0, rows...)
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
// step), copied in to dev, embedded by embedFn without gradient and copied
// back to the host. view is a training view
// (its shape gives C x H x W). The count is rounded down to a multiple of
// groups (the BatchNorm groups of the encoder) and nothing happens below two
// rows per group. buf is reused and returned.
func refreshMemory(mem *memory.Memory, n, groups int, images ImageSource, view *tensor.Tensor, step int,
	dev tensor.Device, embedFn func(x *tensor.Tensor) (*tensor.Tensor, error), buf []float32) ([]float32, error) {
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
	x, err := onDevice(tensor.FromSlice(buf, shape...), dev)
	if err != nil {
		return buf, err
	}
	y, err := embedFn(x)
	if err != nil {
		return buf, err
	}
	rows, err := toHost(nil, y)
	if err != nil {
		return buf, err
	}
	if err := mem.Refresh(pos, rows, step); err != nil {
		return buf, err
	}
	return buf, nil
}
