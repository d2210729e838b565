package data

import (
	"fmt"

	"github.com/duel-ssl/duel/duel/data/augment"
	"github.com/duel-ssl/duel/internal/splitmix"
)

// EvalIterator walks a whole split in order, in batches of plain
// (non-augmented) normalised images: Views[0] is N x C x H x W, the last
// batch may be shorter.
type EvalIterator struct {
	ds    *Dataset
	pipe  *augment.Pipeline
	batch int
	pos   int
	ws    augment.Workspace
}

// NewEvalIterator returns an iterator over ds with the given normalisation
// (nil mean and std leave values in [0, 1]) and size (0 keeps the image
// size).
func NewEvalIterator(ds *Dataset, size int, mean, std []float32, batch int) (*EvalIterator, error) {
	if batch <= 0 {
		return nil, fmt.Errorf("eval iterator: batch size %d, expected > 0", batch)
	}
	p := augment.None(size, mean, std)
	if err := p.Validate(ds.C); err != nil {
		return nil, err
	}
	return &EvalIterator{ds: ds, pipe: p, batch: batch}, nil
}

// Next returns the next batch, or false when the split is exhausted.
func (it *EvalIterator) Next() (*Batch, bool) {
	d := it.ds
	if it.pos >= d.Len() {
		return nil, false
	}
	n := min(it.batch, d.Len()-it.pos)
	oh, ow := it.pipe.OutSize(d.H, d.W)
	per := d.C * oh * ow
	b := &Batch{Step: int64(it.pos / it.batch), N: n, C: d.C, H: oh, W: ow,
		IDs: make([]int64, n), Labels: make([]int32, n)}
	b.Views[0] = make([]float32, n*per)
	var r splitmix.RNG // unused by the None pipeline
	for i := 0; i < n; i++ {
		id := it.pos + i
		b.IDs[i], b.Labels[i] = int64(id), d.Labels[id]
		it.pipe.Apply(b.Views[0][i*per:(i+1)*per], d.Image(id), d.H, d.W, d.C, &r, &it.ws)
	}
	it.pos += n
	return b, true
}

// Reset starts the iteration over.
func (it *EvalIterator) Reset() { it.pos = 0 }
