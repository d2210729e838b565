// Package linear holds the passes of a fully connected layer, y = x W^T + b
// over the rows of x (PyTorch's nn.Linear): GEMMs (kernels/gemm) and the
// bias loops.
//
// # Layout
//
// x is rows x in, W is out x in, y and its gradient dy are rows x out, all
// row-major and dense; b and its gradient have out elements.
package linear

import "github.com/duel-ssl/duel/kernels/gemm"

// Every pass multiplies with mm: gemm.Sgemm, or gemm.SgemmBF16 for the
// products of factors rounded to bfloat16.

// Forward writes y = x W^T into y, plus b on every row when b is not nil.
func Forward(mm gemm.Func, x, w, b, y []float32, rows, in, out int) {
	mm(false, true, rows, out, in, 1, x, in, w, in, 0, y, out)
	if b == nil {
		return
	}
	for r := range rows {
		row := y[r*out : (r+1)*out]
		for j := range row {
			row[j] += b[j]
		}
	}
}

// InputGrad writes (adds, when acc) dx = dy W, the gradient of x.
func InputGrad(mm gemm.Func, dx, dy, w []float32, rows, in, out int, acc bool) {
	mm(false, false, rows, in, out, 1, dy, out, w, in, beta(acc), dx, in)
}

// WeightGrad writes (adds, when acc) dW = dy^T x, the gradient of W.
func WeightGrad(mm gemm.Func, dw, dy, x []float32, rows, in, out int, acc bool) {
	mm(true, false, out, in, rows, 1, dy, out, x, in, beta(acc), dw, in)
}

// BiasGrad adds the sum of the rows of dy, the gradient of b, into db.
func BiasGrad(db, dy []float32, rows, out int) {
	for r := range rows {
		row := dy[r*out : (r+1)*out]
		for j, v := range row {
			db[j] += v
		}
	}
}

// beta returns the GEMM beta that accumulates (1) or overwrites (0).
func beta(acc bool) float32 {
	if acc {
		return 1
	}
	return 0
}
