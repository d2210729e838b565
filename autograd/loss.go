package autograd

import (
	"fmt"
	"slices"
)

// CrossEntropy returns the mean softmax cross-entropy of logits (N×C)
// against class indices targets (N values in [0, C)), as a 0-d value; it is
// F.cross_entropy with mean reduction, fused into one op.
//
//	L = (1/N) Σᵢ (ln Σⱼ exp(xᵢⱼ) - xᵢ,ₜᵢ)
//	∂L/∂xᵢⱼ = g·(softmax(xᵢ)ⱼ - [j = tᵢ]) / N
//
// The forward pass computes one exponential per logit; when recording, the
// probabilities are kept so that the backward pass computes none. The
// composite LogSoftmax → pick → Mean computes the same value.
func CrossEntropy(tp *Tape, logits *Var, targets []int) *Var {
	if logits.Value.NDim() != 2 {
		panic(fmt.Sprintf("autograd.CrossEntropy: logits %v are not 2-d (N, C)", logits))
	}
	n, c := logits.Value.Dim(0), logits.Value.Dim(1)
	if len(targets) != n {
		panic(fmt.Sprintf("autograd.CrossEntropy: %d targets for %d rows of logits %v", len(targets), n, logits))
	}
	for i, t := range targets {
		if t < 0 || t >= c {
			panic(fmt.Sprintf("autograd.CrossEntropy: target %d of row %d out of range for %d classes", t, i, c))
		}
	}
	recording := tp.Recording(logits)
	if recording {
		targets = slices.Clone(targets) // the caller may reuse its slice
	}
	// y is NaN for n = 0, as PyTorch's; p, the probabilities, is kept for
	// the backward pass.
	y, p := crossEntropyRows(logits.Value.Contiguous(), targets, recording)
	if !recording {
		return Const(y)
	}
	return tp.Record(y, func(out *Var) {
		scale := out.Grad.Item() / float32(n)
		// p becomes the gradient in place: it is not needed afterwards.
		crossEntropyBackRows(p, targets, scale)
		AccumulateGradOwned(logits, p)
	}, logits)
}
