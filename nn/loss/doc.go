// Package loss holds the training objectives: cross-entropy, InfoNCE with
// the paper's ε (Appendix B, Eq. 17), SimCLR's NT-Xent, BYOL's normalised
// MSE and Barlow Twins' redundancy reduction.
//
// Each loss computes on its inputs' device and reads no host slice. Where
// the backend has the loss's optional capability (tensor.LossBackend for
// BYOL and Barlow Twins, tensor.ContrastiveBackend for InfoNCE and
// NT-Xent, tensor.RowsBackend for cross-entropy) it is one fused autograd
// operation: a forward pass computed with GEMMs and float64 accumulation
// (on the CPU, the loops of kernels/loss and kernels/rows), and a
// hand-written backward pass recorded with Tape.Record. Elsewhere it is
// composed of autograd operations in float32. A nil tape computes the
// value only. Every loss returns a
// scalar (0-d) variable and is checked against PyTorch 1.13 (values and
// input gradients, testdata/losses.json made by gen_fixtures.py) and by
// float64 finite differences.
//
// Shape mismatches and out-of-range arguments are programming errors and
// panic with a message naming the loss and what was wrong, as in package
// autograd; user input is validated before it reaches a loss.
package loss

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
)

// dims2 returns the dimensions of a 2-d variable, panicking with a message
// naming the loss when v is nil or not 2-d.
func dims2(op, name string, v *autograd.Var) (int, int) {
	if v == nil || v.Value == nil {
		panic(fmt.Sprintf("loss.%s: %s is nil", op, name))
	}
	if v.Value.NDim() != 2 {
		panic(fmt.Sprintf("loss.%s: %s has shape %v, expected 2-d (batch, dim)", op, name, v.Shape()))
	}
	return v.Value.Dim(0), v.Value.Dim(1)
}
