package train

import (
	"errors"

	"github.com/duel-ssl/duel/nn/safetensors"
)

// ErrDiverged is returned (wrapped) when a model's tensors hold NaN or
// infinite values: the training diverged (a loss can stay finite while
// the weights or batch-norm statistics overflow).
var ErrDiverged = errors.New("NaN or infinite values: the training diverged")

// nonFinite returns the first float tensor of ts holding NaN or infinite
// values and how many it holds (0 when none does).
func nonFinite(ts []safetensors.Tensor) (name string, n int) {
	for _, t := range ts {
		switch d := t.Data.(type) {
		case []float32:
			for _, v := range d {
				if !finite(float64(v)) {
					n++
				}
			}
		case []float64:
			for _, v := range d {
				if !finite(v) {
					n++
				}
			}
		}
		if n > 0 {
			return t.Name, n
		}
	}
	return "", 0
}
