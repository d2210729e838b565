package eval

import (
	"fmt"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/tensor"
)

// Encoder maps a batch of images, N x C x H x W normalised float32, to
// features N x D. It must compute in evaluation mode (BatchNorm running
// statistics, nn.Train(m, false)) so that a row's features do not depend on
// the other rows of its batch. x is on the host; the encoder may compute
// on any device (copying x in) and return its features there: Extract
// copies them to the host, one copy per batch.
type Encoder func(x *tensor.Tensor) (*tensor.Tensor, error)

// ExtractOptions says how Extract reads a split.
type ExtractOptions struct {
	Size      int       // image size fed to the encoder (0 keeps the dataset's)
	Mean, Std []float32 // per-channel normalisation (as in training)
	Batch     int       // images per encoder call (256 when 0)
	// Limit, when > 0, keeps only that many images, chosen by BalancedSubset
	// (round-robin over the classes), for speed.
	Limit int
	// Progress, when set, is called with the images done and the total.
	Progress func(done, total int)
}

// Extract runs enc over the images of ds in order, without augmentation, and
// returns their features with their labels.
func Extract(ds *data.Dataset, enc Encoder, opt ExtractOptions) (*Features, error) {
	if opt.Batch == 0 {
		opt.Batch = 256
	}
	if opt.Limit > 0 && opt.Limit < ds.Len() {
		ds = ds.Subset(BalancedSubset(ds.Labels, opt.Limit))
	}
	it, err := data.NewEvalIterator(ds, opt.Size, opt.Mean, opt.Std, opt.Batch)
	if err != nil {
		return nil, fmt.Errorf("extracting features of %s/%s: %w", ds.Name, ds.Split, err)
	}
	f := &Features{N: ds.Len(), Labels: make([]int32, 0, ds.Len())}
	for {
		b, ok := it.Next()
		if !ok {
			break
		}
		y, err := enc(tensor.FromSlice(b.Views[0], b.N, b.C, b.H, b.W))
		if err != nil {
			return nil, fmt.Errorf("extracting features of %s/%s: %w", ds.Name, ds.Split, err)
		}
		if y.NDim() != 2 || y.Dim(0) != b.N || (f.D != 0 && y.Dim(1) != f.D) || y.Dim(1) == 0 {
			return nil, fmt.Errorf("extracting features of %s/%s: encoder returned shape %v for %d images, expected (%d, D)", ds.Name, ds.Split, y.Shape(), b.N, b.N)
		}
		if f.D == 0 {
			f.D = y.Dim(1)
			f.X = make([]float32, 0, f.N*f.D)
		}
		h, err := y.To(tensor.CPU)
		if err != nil {
			return nil, fmt.Errorf("extracting features of %s/%s: copying them to the host: %w", ds.Name, ds.Split, err)
		}
		f.X = append(f.X, h.Contiguous().Data()...)
		f.Labels = append(f.Labels, b.Labels...)
		if opt.Progress != nil {
			opt.Progress(len(f.Labels), f.N)
		}
	}
	if _, err := NewFeatures(f.X, f.Labels, max(f.D, 1)); err != nil && f.N > 0 {
		return nil, fmt.Errorf("extracting features of %s/%s: %w", ds.Name, ds.Split, err)
	}
	return f, nil
}
