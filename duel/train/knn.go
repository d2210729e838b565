package train

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/eval"
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
	// arena is the training loop's arena, which the encoder allocates
	// from: it is reset before every batch of the measurement, so that the
	// measurement holds the activations of one batch, not of all of them.
	arena *nn.Arena
}

func newKNNMonitor(train, test *data.Dataset, c *Config, mean, std []float32, size, ranks int, arena *nn.Arena) *knnMonitor {
	return &knnMonitor{bank: spaced(train, c.KNNTrain), test: spaced(test, c.KNNTest),
		mean: mean, std: std, k: c.KNNK, batch: knnBatch(c.Batch / max(ranks, 1)), size: size, arena: arena}
}

// knnBatch returns the images in a batch of the kNN monitor's features
// for a training batch of n images a process: n itself, at least 32. The
// monitor's forward passes then take the buffers that the training steps'
// passes left in the arena (which lends a buffer to a request of half its
// size or more), rather than adding a set of their own, as a batch of
// another size would: up to twice a step's activations held for the rest
// of the run.
func knnBatch(n int) int { return max(n, 32) }

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
// for the measurement and back in training mode after it. It runs between
// training steps: the arena's buffers of the last step are taken back.
// Features and the weighted vote are those of duel/eval (Extract, KNN), as
// in duelctl eval: the encoder runs on its device, each batch of images
// copied in and its features copied out; the similarities are multiplied
// and the neighbours chosen there too (tensor.TopK), only the k best of
// each test row coming back.
func (k *knnMonitor) measure(enc ssl.Encoder) (float64, error) {
	nn.Train(enc, false)
	defer nn.Train(enc, true)
	dev := nn.DeviceOf(enc)
	run := func(x *tensor.Tensor) (*tensor.Tensor, error) {
		k.arena.Reset() // Extract copies each batch's features out before the next call
		x, err := x.To(dev)
		if err != nil {
			return nil, fmt.Errorf("copying images to %s: %w", dev, err)
		}
		return enc.Features(nil, autograd.NewVar(x, false)).Value, nil
	}
	opt := eval.ExtractOptions{Size: k.size, Mean: k.mean, Std: k.std, Batch: k.batch}
	bank, err := eval.Extract(k.bank, run, opt)
	if err != nil {
		return 0, fmt.Errorf("kNN monitor: %w", err)
	}
	test, err := eval.Extract(k.test, run, opt)
	if err != nil {
		return 0, fmt.Errorf("kNN monitor: %w", err)
	}
	res, err := eval.KNN(bank, test, eval.KNNConfig{K: k.k, Temperature: knnTemperature, Vote: eval.Weighted, Device: dev})
	if err != nil {
		return 0, fmt.Errorf("kNN monitor: %w", err)
	}
	return res.Top1, nil
}

// settings returns what the measurement computes with, as metrics.jsonl's
// "knn" records it beside each knn_top1: the --knn-* settings are free
// per segment of a resumed run (config.json holds the latest segment's),
// so every line carries its own. The counts are the images used (the
// setting, or the whole split when smaller) and k is capped at the bank,
// as eval.KNN caps it.
func (k *knnMonitor) settings() *KNNSettings {
	return &KNNSettings{K: min(k.k, k.bank.Len()), Temperature: knnTemperature, Train: k.bank.Len(), Test: k.test.Len()}
}
