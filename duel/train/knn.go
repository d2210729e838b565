package train

import (
	"fmt"
	"math"
	"sort"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
)

// knnTemperature weights a neighbour's vote by exp(cos/T), as the kNN
// monitors of InstDisc and solo-learn do.
const knnTemperature = 0.07

// knnMonitor measures the top-1 accuracy of a weighted kNN classifier on
// the encoder's backbone features: a bank of train images (evenly spaced
// over the train split, plain normalised images) classifies test images.
type knnMonitor struct {
	bank, test     *data.Dataset
	mean, std      []float32
	k, batch, size int
}

func newKNNMonitor(train, test *data.Dataset, c *Config, mean, std []float32, size int) *knnMonitor {
	return &knnMonitor{bank: spaced(train, c.KNNTrain), test: spaced(test, c.KNNTest),
		mean: mean, std: std, k: c.KNNK, batch: 128, size: size}
}

// spaced returns n images of ds evenly spaced over it (all when n >= Len).
func spaced(ds *data.Dataset, n int) *data.Dataset {
	if n >= ds.Len() {
		return ds
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = int(int64(i) * int64(ds.Len()) / int64(n))
	}
	return ds.Subset(idx)
}

// measure returns the top-1 accuracy; the encoder is put in evaluation mode
// for the measurement and back in training mode after it.
func (k *knnMonitor) measure(enc ssl.Encoder) (float64, error) {
	nn.Train(enc, false)
	defer nn.Train(enc, true)
	bank, err := features(enc, k.bank, k.mean, k.std, k.size, k.batch)
	if err != nil {
		return 0, err
	}
	test, err := features(enc, k.test, k.mean, k.std, k.size, k.batch)
	if err != nil {
		return 0, err
	}
	d := enc.FeatureDim()
	sims := tensor.MatMul(tensor.FromSlice(test, k.test.Len(), d), tensor.FromSlice(bank, k.bank.Len(), d).T()).Data()
	nb, classes := k.bank.Len(), k.bank.NumClasses()
	kk := min(k.k, nb)
	order := make([]int, nb)
	votes := make([]float64, classes)
	correct := 0
	for i := 0; i < k.test.Len(); i++ {
		row := sims[i*nb : (i+1)*nb]
		for j := range order {
			order[j] = j
		}
		sort.SliceStable(order, func(a, b int) bool { return row[order[a]] > row[order[b]] })
		clear(votes)
		for _, j := range order[:kk] {
			votes[k.bank.Labels[j]] += math.Exp(float64(row[j]) / knnTemperature)
		}
		best := 0
		for c := range votes {
			if votes[c] > votes[best] {
				best = c
			}
		}
		if int32(best) == k.test.Labels[i] {
			correct++
		}
	}
	return float64(correct) / float64(k.test.Len()), nil
}

// features returns the L2-normalised backbone features of every image of ds
// (Len x FeatureDim), computed without gradient in batches.
func features(enc ssl.Encoder, ds *data.Dataset, mean, std []float32, size, batch int) ([]float32, error) {
	it, err := data.NewEvalIterator(ds, size, mean, std, batch)
	if err != nil {
		return nil, err
	}
	d := enc.FeatureDim()
	out := make([]float32, 0, ds.Len()*d)
	for {
		b, ok := it.Next()
		if !ok {
			break
		}
		x := autograd.NewVar(tensor.FromSlice(b.Views[0], b.N, b.C, b.H, b.W), false)
		f := autograd.L2Normalize(nil, enc.Features(nil, x), 1).Value.Contiguous()
		out = append(out, f.Data()...)
	}
	if len(out) != ds.Len()*d {
		return nil, fmt.Errorf("kNN features: %d values for %d images of %d features", len(out), ds.Len(), d)
	}
	return out, nil
}
