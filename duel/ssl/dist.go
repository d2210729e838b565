package ssl

import (
	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
)

// Data-parallel training (Config.Comm with several ranks): each rank's
// Batch holds the views of its shard of the global batch (global
// positions rank, rank+R, ..., see package dist) and the sample ids and
// labels of the whole global batch. A method runs its networks on its
// shard only and joins the results with group.gather before the loss, so
// every rank computes the loss of the whole global batch, and the
// gradients summed over the ranks are those of one process with the whole
// batch. Everything that feeds the memory is gathered the same way, so
// every rank applies the same update to the same memory. Batches that are
// not the step's views (MoCo's shuffled keys, D-SimCLR's memory samples,
// refreshed rows) are global on every rank, and spread runs the networks
// on this rank's rows of them.
//
// With a single rank (no Comm) gather, gatherConst and spread are the
// identity, and the methods compute exactly what they computed before
// data parallelism existed.

// group is a method's view of the process group.
type group struct{ c dist.Comm }

// groupOf returns cfg's process group (a single rank without Comm).
func groupOf(cfg Config) group {
	if cfg.Comm == nil {
		return group{dist.Single{}}
	}
	return group{cfg.Comm}
}

// size returns the number of ranks.
func (g group) size() int { return g.c.Size() }

// gather joins this rank's rows of v (with gradient) into the n rows of
// the global batch.
func (g group) gather(tp *autograd.Tape, v *autograd.Var, n int) (*autograd.Var, error) {
	return dist.Gather(tp, g.c, v, n)
}

// gatherConst joins this rank's rows of t into the n rows of the global
// batch, without gradient.
func (g group) gatherConst(t *tensor.Tensor, n int) (*tensor.Tensor, error) {
	return dist.GatherTensor(g.c, t, n)
}

// spread runs fn on this rank's rows of the global batch x and returns
// the results of every rank, in x's row order.
func (g group) spread(x *tensor.Tensor, fn func(local *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	y, err := fn(dist.ShardTensor(g.c, x))
	if err != nil {
		return nil, err
	}
	return dist.GatherTensor(g.c, y, x.Dim(0))
}

// localSplits returns the ghost BatchNorm groups of a rank's shard for s
// groups in the global batch: s/R when R divides s, so that the rank's
// groups are exactly s/R of the global batch's (package dist), and 1
// otherwise (each rank normalises its shard alone: PyTorch DDP's
// per-process BatchNorm, the same as one process with R groups).
func (g group) localSplits(s int) int {
	s = max(s, 1)
	if r := g.size(); s%r == 0 {
		return s / r
	}
	return 1
}

// refreshGroups returns the multiple that a global batch re-embedded with
// spread must have: s ghost groups of at least two rows, spread over R
// ranks (the least common multiple of s and R).
func (g group) refreshGroups(s int) int {
	a, b := max(s, 1), g.size()
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// syncBatchNorms makes every BatchNorm of m's parts a synchronised one
// over comm (nn.BatchNorm.Sync).
func syncBatchNorms(m Method, comm dist.Comm) {
	for _, p := range m.Parts() {
		for _, nm := range nn.Modules(p.Module) {
			if bn, ok := nm.Module.(*nn.BatchNorm); ok {
				bn.Sync = comm.AllReduce
			}
		}
	}
}
