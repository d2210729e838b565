package loss

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
)

// CrossEntropy returns the mean over the batch of the cross-entropy of
// logits (B, C) with integer class labels (torch.nn.functional.cross_entropy):
//
//	L = (1/B) Σᵢ [ log Σⱼ exp(xᵢⱼ) - xᵢ,yᵢ ]
//	∂L/∂xᵢⱼ = (softmax(xᵢ)ⱼ - [j = yᵢ]) / B
//
// It is autograd.CrossEntropy (one fused op: one exponential per logit,
// the probabilities kept for the backward pass) behind this package's
// argument checks; unlike autograd's, an empty batch panics here.
func CrossEntropy(tp *autograd.Tape, logits *autograd.Var, labels []int) *autograd.Var {
	b, c := dims2("CrossEntropy", "logits", logits)
	if len(labels) != b {
		panic(fmt.Sprintf("loss.CrossEntropy: %d labels for %d rows of logits", len(labels), b))
	}
	if b == 0 {
		panic("loss.CrossEntropy: empty batch")
	}
	for i, y := range labels {
		if y < 0 || y >= c {
			panic(fmt.Sprintf("loss.CrossEntropy: label %d of row %d out of range for %d classes", y, i, c))
		}
	}
	return autograd.CrossEntropy(tp, logits, labels)
}
