// Package loss holds the training objectives: cross-entropy, InfoNCE with
// the paper's ε (Appendix B, Eq. 17), SimCLR's NT-Xent, BYOL's normalised
// MSE and Barlow Twins' redundancy reduction.
//
// Each loss is one fused autograd operation: a forward pass computed with
// GEMMs and float64 accumulation, and a hand-written backward pass recorded
// with Tape.Record. A nil tape computes the value only. Every loss returns a
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
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/tensor"
)

// matrix returns the data and dimensions of a 2-d variable, copying it if
// it is not contiguous.
func matrix(op, name string, v *autograd.Var) ([]float32, int, int) {
	r, c := dims2(op, name, v)
	return v.Value.Contiguous().Data(), r, c
}

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

// mulABt returns alpha * a bᵀ for row-major a (m,k) and b (n,k).
func mulABt(a, b []float32, m, n, k int, alpha float32) []float32 {
	c := make([]float32, m*n)
	if m > 0 && n > 0 {
		gemm.Sgemm(false, true, m, n, k, alpha, a, k, b, k, 0, c, n)
	}
	return c
}

// gemmAcc computes c = alpha*op(a)*op(b) + c with op(a) (m,k), op(b) (k,n).
func gemmAcc(transA, transB bool, m, n, k int, alpha float32, a, b, c []float32) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	gemm.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, 1, c, n)
}

// scalar wraps a loss value as a 0-d tensor.
func scalar(v float64) *tensor.Tensor { return tensor.Scalar(float32(v)) }

// seed returns the gradient flowing into a scalar loss.
func seed(out *autograd.Var) float32 { return out.Grad.Contiguous().Data()[0] }
