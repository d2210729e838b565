// Package heads builds the projection and prediction heads of the
// self-supervised methods: multi-layer perceptrons of Linear layers with
// optional BatchNorm1d and ReLU between them, laid out as a PyTorch
// nn.Sequential so that their tensors are named "0.weight", "1.weight",
// "1.running_mean", ... (and "projector.0.weight" under a prefix).
package heads

import (
	"fmt"
	"math/rand/v2"

	"github.com/duel-ssl/duel/nn"
)

// Spec describes an MLP head.
type Spec struct {
	// Dims are the layer widths: Dims[0] is the input dimension,
	// Dims[len-1] the output; there are len(Dims)-1 Linear layers.
	Dims []int
	// HiddenBN puts a BatchNorm1d after every hidden Linear layer, before
	// its ReLU.
	HiddenBN bool
	// LastBN puts a BatchNorm1d after the last Linear layer (SimCLR v2
	// style); there is never a ReLU after the last layer.
	LastBN bool
	// NoBias builds the Linear layers without bias (Barlow Twins).
	NoBias bool
}

// Validate reports a spec that cannot be built.
func (s Spec) Validate() error {
	if len(s.Dims) < 2 {
		return fmt.Errorf("heads: dims %v, expected at least an input and an output dimension", s.Dims)
	}
	for _, d := range s.Dims {
		if d <= 0 {
			return fmt.Errorf("heads: dims %v, expected positive dimensions", s.Dims)
		}
	}
	return nil
}

// String describes the layers, e.g. "Linear(2048,4096)-BN-ReLU-Linear(4096,256)".
func (s Spec) String() string {
	out := ""
	for i := 1; i < len(s.Dims); i++ {
		if i > 1 {
			out += "-"
		}
		out += fmt.Sprintf("Linear(%d,%d)", s.Dims[i-1], s.Dims[i])
		last := i == len(s.Dims)-1
		if (!last && s.HiddenBN) || (last && s.LastBN) {
			out += "-BN"
		}
		if !last {
			out += "-ReLU"
		}
	}
	if s.NoBias {
		out += " (no bias)"
	}
	return out
}

// MLP is a head: an nn.Sequential of Linear, BatchNorm1d and ReLU layers.
// Its Forward takes (B, Dims[0]) and returns (B, Dims[len-1]).
type MLP struct {
	*nn.Sequential
	// Spec is the description the head was built from.
	Spec Spec
}

// NewMLP builds the head described by spec, initialising the Linear layers
// as PyTorch does (r supplies the randomness).
func NewMLP(spec Spec, r *rand.Rand) (*MLP, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var layers []nn.Module
	for i := 1; i < len(spec.Dims); i++ {
		in, out := spec.Dims[i-1], spec.Dims[i]
		last := i == len(spec.Dims)-1
		layers = append(layers, nn.NewLinear(in, out, !spec.NoBias, r))
		if (!last && spec.HiddenBN) || (last && spec.LastBN) {
			layers = append(layers, nn.NewBatchNorm1d(out))
		}
		if !last {
			layers = append(layers, nn.NewReLU())
		}
	}
	return &MLP{Sequential: nn.NewSequential(layers...), Spec: spec}, nil
}

// OutDim returns the head's output dimension.
func (m *MLP) OutDim() int { return m.Spec.Dims[len(m.Spec.Dims)-1] }
