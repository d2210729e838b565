package train

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
)

// DefaultAgreeEvery is how often (in steps) data-parallel ranks compare
// the hash of their model and memory when Options.AgreeEvery is 0.
const DefaultAgreeEvery = 100

// group is the trainer's view of data-parallel training: the process
// group, the gradient reducer, and the buffers averaged over the ranks.
type group struct {
	comm    dist.Comm
	reducer *dist.Reducer
	buffers []*nn.Buffer
	every   int
}

// newGroup prepares data parallelism over comm for method (nil comm: one
// process).
func newGroup(comm dist.Comm, method ssl.Method, every int) *group {
	if comm == nil {
		comm = dist.Single{}
	}
	if every <= 0 {
		every = DefaultAgreeEvery
	}
	g := &group{comm: comm, every: every}
	if comm.Size() == 1 {
		return g
	}
	g.reducer = dist.NewReducer(comm, method.Parameters(), 0)
	for _, p := range method.Parts() {
		for _, b := range nn.NamedBuffers(p.Module) {
			if !b.Buffer.Int64 {
				g.buffers = append(g.buffers, b.Buffer)
			}
		}
	}
	return g
}

// size returns the number of ranks.
func (g *group) size() int { return g.comm.Size() }

// checkConfig fails unless every rank trains the same configuration, and
// checks that the global batch can be sharded.
func (g *group) checkConfig(c *Config) error {
	r := g.size()
	if r == 1 {
		return nil
	}
	if err := c.CheckBatchShards(r); err != nil {
		return err
	}
	if c.BNSplits > 1 && c.BNSplits%r != 0 {
		return bad("bn-splits", c.BNSplits, fmt.Sprintf("1 or a multiple of the %d ranks (each rank normalises its share of the groups)", r))
	}
	js, err := json.Marshal(c)
	if err != nil {
		return err
	}
	h := dist.NewHasher()
	h.Bytes(js)
	return dist.Agree(g.comm, "the training configuration (flags)", h.Sum())
}

// CheckBatchShards fails unless the global batch (--batch) splits over
// ranks data-parallel ranks with at least 2 images each.
func (c *Config) CheckBatchShards(ranks int) error {
	if ranks > 1 && (c.Batch%ranks != 0 || c.Batch/ranks < 2) {
		return bad("batch", c.Batch, fmt.Sprintf("a multiple of the %d ranks with at least 2 images per rank (--batch is the global batch)", ranks))
	}
	return nil
}

// averageBuffers replaces every BatchNorm running statistic by its mean
// over the ranks: each rank's statistics moved towards its own shard's
// batch statistics, and their mean is what one process with the whole
// batch computes (the update is linear in the batch statistics).
func (g *group) averageBuffers() error {
	if g.size() == 1 || len(g.buffers) == 0 {
		return nil
	}
	var flat []float32
	for _, b := range g.buffers {
		h, err := b.Tensor.To(tensor.CPU)
		if err != nil {
			return fmt.Errorf("averaging BatchNorm statistics: %w", err)
		}
		flat = append(flat, h.Contiguous().Data()...)
	}
	if err := g.comm.AllReduce(flat); err != nil {
		return fmt.Errorf("averaging BatchNorm statistics: %w", err)
	}
	inv := 1 / float32(g.size())
	off := 0
	for _, b := range g.buffers {
		n := b.Tensor.Numel()
		vals := flat[off : off+n]
		off += n
		for i := range vals {
			vals[i] *= inv
		}
		if b.Tensor.Device() == tensor.CPU && b.Tensor.IsContiguous() {
			copy(b.Tensor.Data(), vals)
			continue
		}
		t, err := tensor.FromSlice(append([]float32(nil), vals...), b.Tensor.Shape()...).To(b.Tensor.Device())
		if err != nil {
			return fmt.Errorf("averaging BatchNorm statistics: %w", err)
		}
		tensor.CopyInto(b.Tensor, t) // in place: the layer keeps its buffer
	}
	return nil
}

// agree fails unless every rank holds the same model (every tensor of
// every part), optimizer state and memory (rows and sample ids).
func (g *group) agree(m ssl.Method, opt optim.Optimizer, step int) error {
	if g.size() == 1 {
		return nil
	}
	h := dist.NewHasher()
	sd := opt.StateDict()
	for _, name := range slices.Sorted(maps.Keys(sd)) {
		t, err := sd[name].To(tensor.CPU)
		if err != nil {
			return err
		}
		h.Float32s(t.Contiguous().Data())
	}
	for _, p := range m.Parts() {
		sd, err := nn.StateDictOf(p.Module).ToHost()
		if err != nil {
			return err
		}
		for _, e := range sd {
			h.Float32s(e.Tensor.Contiguous().Data())
		}
	}
	what := fmt.Sprintf("the model or the optimizer state after step %d", step)
	if mem := m.Memory(); mem != nil {
		h.Float32s(mem.Rows()[:mem.Len()*mem.Dim()])
		h.Int64s(mem.IDs())
		what = fmt.Sprintf("the model, the optimizer state or the memory after step %d", step)
	}
	return dist.Agree(g.comm, what, h.Sum())
}

// broadcastModel copies rank 0's model (every tensor of every part) to the
// other ranks: every rank starts from rank 0's parameters and statistics,
// as DDP does, whatever its own initialisation or checkpoint read gave.
func (g *group) broadcastModel(m ssl.Method) error {
	if g.size() == 1 {
		return nil
	}
	for _, p := range m.Parts() {
		sd := nn.StateDictOf(p.Module)
		for _, e := range sd {
			h, err := e.Tensor.To(tensor.CPU)
			if err != nil {
				return fmt.Errorf("broadcasting %s: %w", e.Name, err)
			}
			vals := append([]float32(nil), h.Contiguous().Data()...)
			if err := g.comm.Broadcast(dist.Float32Bytes(vals), 0); err != nil {
				return fmt.Errorf("broadcasting %s from rank 0: %w", e.Name, err)
			}
			t, err := tensor.FromSlice(vals, e.Tensor.Shape()...).To(e.Tensor.Device())
			if err != nil {
				return fmt.Errorf("broadcasting %s: %w", e.Name, err)
			}
			tensor.CopyInto(e.Tensor, t)
		}
	}
	return nil
}
