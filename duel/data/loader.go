package data

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/duel-ssl/duel/duel/data/augment"
	"github.com/duel-ssl/duel/internal/splitmix"
)

// Batch is one training step's data: two augmented views of N images, each
// N x C x H x W float32 (normalised), with the sample ids (image indices in
// the dataset) and labels (for metrics only). An evaluation batch has only
// Views[0].
//
// A loader of one rank of a data-parallel run (LoaderConfig.Ranks > 1)
// augments only the rank's shard of the global batch, the images at
// global positions Rank, Rank+Ranks, ... (N of them, in that order),
// each with the draws it has in the whole batch, while IDs and Labels
// describe the whole global batch (for the memory, which every rank
// updates with the global batch).
type Batch struct {
	Step       int64
	N, C, H, W int
	Views      [2][]float32
	IDs        []int64
	Labels     []int32
}

// LoaderConfig configures a Loader.
type LoaderConfig struct {
	BatchSize int    // images per batch, > 0
	Workers   int    // goroutines applying the augmentations; 0 means GOMAXPROCS
	Prefetch  int    // batches prepared ahead of Next; 0 means 2
	Seed      uint64 // seed of the augmentations
	StartStep int64  // first step, to resume a run
	// Rank and Ranks shard the batch for data-parallel training: this
	// loader augments the images at global positions Rank, Rank+Ranks,
	// ... of each global batch of BatchSize. Ranks 0 or 1: the whole
	// batch.
	Rank, Ranks int
}

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("data loader closed")

// chunkSize is the number of images one worker task augments.
const chunkSize = 16

// Loader produces batches step after step: the sampler draws the ids of a
// step and worker goroutines apply the pipeline twice to every image. The
// random numbers of view v of image i of step t come from
// splitmix.Derive(Seed, t, i, v) alone, so batches are identical for a seed
// whatever the number of workers.
type Loader struct {
	ds      *Dataset
	sampler *Sampler
	pipe    *augment.Pipeline
	cfg     LoaderConfig
	oh, ow  int

	ordered chan *pending // batches in step order, at most Prefetch ahead
	work    chan task
	free    chan *Batch
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

type pending struct {
	b     *Batch
	left  atomic.Int32  // tasks not yet done
	ready chan struct{} // closed when left reaches 0
}

type task struct {
	p      *pending
	lo, hi int
}

// NewLoader starts a loader over ds. Call Close when done.
func NewLoader(ds *Dataset, s *Sampler, p *augment.Pipeline, cfg LoaderConfig) (*Loader, error) {
	if ds == nil || s == nil || p == nil {
		return nil, fmt.Errorf("data loader: nil dataset, sampler or pipeline")
	}
	if cfg.BatchSize <= 0 {
		return nil, fmt.Errorf("data loader: batch size %d, expected > 0", cfg.BatchSize)
	}
	if cfg.Ranks < 0 || cfg.Rank < 0 || (cfg.Ranks > 0 && cfg.Rank >= cfg.Ranks) {
		return nil, fmt.Errorf("data loader: rank %d of %d ranks, expected 0 <= rank < ranks", cfg.Rank, cfg.Ranks)
	}
	if cfg.Ranks > cfg.BatchSize {
		return nil, fmt.Errorf("data loader: %d ranks for a batch of %d images, expected at most one rank per image", cfg.Ranks, cfg.BatchSize)
	}
	if cfg.Workers < 0 || cfg.Prefetch < 0 {
		return nil, fmt.Errorf("data loader: %d workers and prefetch %d, expected >= 0", cfg.Workers, cfg.Prefetch)
	}
	if err := p.Validate(ds.C); err != nil {
		return nil, err
	}
	if len(s.labels) != ds.Len() {
		return nil, fmt.Errorf("data loader: the sampler was built for %d images, the dataset has %d", len(s.labels), ds.Len())
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Prefetch == 0 {
		cfg.Prefetch = 2
	}
	l := &Loader{ds: ds, sampler: s, pipe: p, cfg: cfg,
		ordered: make(chan *pending, cfg.Prefetch),
		work:    make(chan task, cfg.Workers*4),
		free:    make(chan *Batch, cfg.Prefetch+2),
		done:    make(chan struct{}),
	}
	l.oh, l.ow = p.OutSize(ds.H, ds.W)
	l.wg.Add(1 + cfg.Workers)
	go l.dispatch()
	for i := 0; i < cfg.Workers; i++ {
		go l.worker()
	}
	return l, nil
}

// ViewShape returns the C, H, W of the views.
func (l *Loader) ViewShape() (c, h, w int) { return l.ds.C, l.oh, l.ow }

func (l *Loader) alloc() *Batch {
	select {
	case b := <-l.free:
		return b
	default:
	}
	n, per := l.shardLen(), l.ds.C*l.oh*l.ow
	return &Batch{N: n, C: l.ds.C, H: l.oh, W: l.ow,
		Views:  [2][]float32{make([]float32, n*per), make([]float32, n*per)},
		IDs:    make([]int64, l.cfg.BatchSize),
		Labels: make([]int32, l.cfg.BatchSize)}
}

// ranks returns the number of ranks the batch is sharded over (1: none).
func (l *Loader) ranks() int { return max(l.cfg.Ranks, 1) }

// shardLen returns the number of images this loader augments per batch.
func (l *Loader) shardLen() int {
	return (l.cfg.BatchSize - l.cfg.Rank + l.ranks() - 1) / l.ranks()
}

// dispatch draws each step's ids and hands out the augmentation tasks.
func (l *Loader) dispatch() {
	defer l.wg.Done()
	defer close(l.work)
	for step := l.cfg.StartStep; ; step++ {
		b := l.alloc()
		b.Step = step
		l.sampler.Batch(step, b.IDs, b.Labels)
		p := &pending{b: b, ready: make(chan struct{})}
		p.left.Store(int32((b.N + chunkSize - 1) / chunkSize))
		select {
		case l.ordered <- p:
		case <-l.done:
			return
		}
		for lo := 0; lo < b.N; lo += chunkSize {
			select {
			case l.work <- task{p: p, lo: lo, hi: min(lo+chunkSize, b.N)}:
			case <-l.done:
				return
			}
		}
	}
}

// worker augments the images of its tasks.
func (l *Loader) worker() {
	defer l.wg.Done()
	var ws augment.Workspace
	d := l.ds
	per := d.C * l.oh * l.ow
	for {
		select {
		case t, ok := <-l.work:
			if !ok {
				return
			}
			b := t.p.b
			for k := t.lo; k < t.hi; k++ {
				i := k*l.ranks() + l.cfg.Rank // position in the global batch
				img := d.Image(int(b.IDs[i]))
				for v := 0; v < 2; v++ {
					r := splitmix.New(splitmix.Derive(l.cfg.Seed, uint64(b.Step), uint64(i), uint64(v)))
					l.pipe.Apply(b.Views[v][k*per:(k+1)*per], img, d.H, d.W, d.C, &r, &ws)
				}
			}
			if t.p.left.Add(-1) == 0 {
				close(t.p.ready)
			}
		case <-l.done:
			return
		}
	}
}

// Next returns the next step's batch, waiting until it is ready. The batch
// is the caller's; handing it back with Release lets the loader reuse its
// memory.
func (l *Loader) Next() (*Batch, error) {
	select {
	case <-l.done:
		return nil, ErrClosed
	default:
	}
	select {
	case p := <-l.ordered:
		select {
		case <-p.ready:
			return p.b, nil
		case <-l.done:
			return nil, ErrClosed
		}
	case <-l.done:
		return nil, ErrClosed
	}
}

// Release gives a batch's memory back to the loader; b must not be used
// afterwards.
func (l *Loader) Release(b *Batch) {
	if b == nil || b.N != l.shardLen() || len(b.IDs) != l.cfg.BatchSize {
		return
	}
	select {
	case l.free <- b:
	default:
	}
}

// Close stops the goroutines. Next returns ErrClosed afterwards.
func (l *Loader) Close() {
	l.once.Do(func() {
		close(l.done)
		l.wg.Wait()
	})
}
