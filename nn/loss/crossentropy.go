package loss

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// CrossEntropy returns the mean over the batch of the cross-entropy of
// logits (B, C) with integer class labels (torch.nn.functional.cross_entropy):
//
//	L = (1/B) Σᵢ [ log Σⱼ exp(xᵢⱼ) - xᵢ,yᵢ ]
//	∂L/∂xᵢⱼ = (softmax(xᵢ)ⱼ - [j = yᵢ]) / B
func CrossEntropy(tp *autograd.Tape, logits *autograd.Var, labels []int) *autograd.Var {
	x, b, c := matrix("CrossEntropy", "logits", logits)
	if len(labels) != b {
		panic(fmt.Sprintf("loss.CrossEntropy: %d labels for %d rows of logits", len(labels), b))
	}
	if b == 0 {
		panic("loss.CrossEntropy: empty batch")
	}
	lse := make([]float64, b)
	var total float64
	for i, y := range labels {
		if y < 0 || y >= c {
			panic(fmt.Sprintf("loss.CrossEntropy: label %d of row %d out of range for %d classes", y, i, c))
		}
		row := x[i*c : (i+1)*c]
		lse[i] = logSumExp(row)
		total += lse[i] - float64(row[y])
	}
	return tp.Record(scalar(total/float64(b)), func(out *autograd.Var) {
		scale := float64(seed(out)) / float64(b)
		dx := tensor.New(b, c)
		d := dx.Data()
		for i, y := range labels {
			row, drow := x[i*c:(i+1)*c], d[i*c:(i+1)*c]
			for j, v := range row {
				drow[j] = float32(scale * math.Exp(float64(v)-lse[i]))
			}
			drow[y] -= float32(scale)
		}
		autograd.AccumulateGradOwned(logits, dx)
	}, logits)
}

// logSumExp returns log Σ exp(row), computed stably in float64.
func logSumExp(row []float32) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}
