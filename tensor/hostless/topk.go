package hostless

import "github.com/duel-ssl/duel/tensor"

var _ tensor.TopKBackend = Fused{}

// TopK runs the CPU's row top-k (kernels/topk) on the unwrapped handles.
func (Fused) TopK(vals, idx, x tensor.Operand, k int) {
	cpuCap[tensor.TopKBackend]().TopK(unwrapOp("TopK", vals), unwrapOp("TopK", idx), unwrapOp("TopK", x), k)
}
