package autograd

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// MatMul returns the matrix product of a (m×k) and b (k×n).
//
//	C = A·B,  ∂L/∂A = G·Bᵀ,  ∂L/∂B = Aᵀ·G
//
// Both gradients are single GEMMs on transposed views (no copies), written
// straight into the inputs' gradient buffers when those exist.
func MatMul(tp *Tape, a, b *Var) *Var {
	if a.Value.NDim() != 2 || b.Value.NDim() != 2 {
		panic(fmt.Sprintf("autograd.MatMul: operands %v and %v are not both 2-d", a, b))
	}
	return tp.Record(tensor.MatMul(a.Value, b.Value), func(out *Var) {
		g := out.Grad
		if a.RequiresGrad {
			gemmAccumulate(a, g, b.Value.T())
		}
		if b.RequiresGrad {
			gemmAccumulate(b, a.Value.T(), g)
		}
	}, a, b)
}

// gemmAccumulate adds l·r into v.Grad with one GEMM.
func gemmAccumulate(v *Var, l, r *tensor.Tensor) {
	if v.Grad == nil {
		v.Grad = tensor.MatMul(l, r)
		return
	}
	tensor.MatMulInto(v.Grad, l, r, 1)
}

// BatchMatMul returns the batched matrix product of a (batch×m×k) and b
// (batch×k×n); a batch of 1 on either side broadcasts.
//
//	Cᵢ = Aᵢ·Bᵢ,  ∂L/∂Aᵢ = Gᵢ·Bᵢᵀ,  ∂L/∂Bᵢ = Aᵢᵀ·Gᵢ
//
// summed over i for a broadcast operand. Gradients are batched GEMMs on
// transposed views written into the gradient buffers; a broadcast right
// operand gets a single GEMM over the whole batch,
// ∂L/∂B = [A₁;…;Aₙ]ᵀ·[G₁;…;Gₙ].
func BatchMatMul(tp *Tape, a, b *Var) *Var {
	if a.Value.NDim() != 3 || b.Value.NDim() != 3 {
		panic(fmt.Sprintf("autograd.BatchMatMul: operands %v and %v are not both 3-d", a, b))
	}
	return tp.Record(tensor.BatchMatMul(a.Value, b.Value), func(out *Var) {
		g := out.Grad
		batch, m, n := g.Dim(0), g.Dim(1), g.Dim(2)
		if a.RequiresGrad {
			dst, beta := gradBufferBeta(a)
			bT := b.Value.Transpose(1, 2)
			if a.Value.Dim(0) == batch {
				tensor.BatchMatMulInto(dst, g, bT, beta)
			} else { // a broadcasts: sum the batch's products
				for i := range batch {
					tensor.MatMulInto(matrix(dst, 0), matrix(g, i), matrix(bT, i%bT.Dim(0)), beta)
					beta = 1
				}
			}
		}
		if b.RequiresGrad {
			dst, beta := gradBufferBeta(b)
			switch {
			case b.Value.Dim(0) == batch:
				tensor.BatchMatMulInto(dst, a.Value.Transpose(1, 2), g, beta)
			default: // b broadcasts and a does not: one GEMM over the stacked batch
				k := a.Value.Dim(2)
				af := a.Value.Reshape(batch*m, k)
				gf := g.Reshape(batch*m, n)
				tensor.MatMulInto(matrix(dst, 0), af.T(), gf, beta)
			}
		}
	}, a, b)
}

// gradBufferBeta returns v's gradient buffer and the GEMM beta to use for
// the first write into it: 0 for a fresh buffer, 1 to accumulate.
func gradBufferBeta(v *Var) (*tensor.Tensor, float32) {
	if v.Grad == nil {
		return gradBuffer(v), 0
	}
	return v.Grad, 1
}

// matrix returns entry i of a 3-d tensor as a 2-d view.
func matrix(t *tensor.Tensor, i int) *tensor.Tensor {
	return t.Slice(0, i, i+1).Squeeze(0)
}
