package hostless

import "github.com/duel-ssl/duel/tensor"

var _ tensor.ContrastiveBackend = Fused{}

// InfoNCE runs the CPU's InfoNCE on the unwrapped handles.
func (Fused) InfoNCE(loss, gs, ge, q, k, neg tensor.Operand, a tensor.ContrastArgs) {
	const op = "InfoNCE"
	cpuCap[tensor.ContrastiveBackend]().InfoNCE(unwrapOp(op, loss), unwrapOp(op, gs), unwrapOpt(op, ge),
		unwrapOp(op, q), unwrapOp(op, k), unwrapOpt(op, neg), a)
}

// InfoNCEBack runs the CPU's InfoNCE gradient on the unwrapped handles.
func (Fused) InfoNCEBack(dq, dk, gs, ge, q, k, neg, seed tensor.Operand, tau float64) {
	const op = "InfoNCEBack"
	cpuCap[tensor.ContrastiveBackend]().InfoNCEBack(unwrapOpt(op, dq), unwrapOpt(op, dk), unwrapOp(op, gs),
		unwrapOpt(op, ge), unwrapOp(op, q), unwrapOp(op, k), unwrapOpt(op, neg), unwrapOp(op, seed), tau)
}

// NTXent runs the CPU's NT-Xent on the unwrapped handles.
func (Fused) NTXent(loss, gs, ge, z, neg tensor.Operand, a tensor.ContrastArgs) {
	const op = "NTXent"
	cpuCap[tensor.ContrastiveBackend]().NTXent(unwrapOp(op, loss), unwrapOp(op, gs), unwrapOpt(op, ge),
		unwrapOp(op, z), unwrapOpt(op, neg), a)
}

// NTXentBack runs the CPU's NT-Xent gradient on the unwrapped handles.
func (Fused) NTXentBack(dz, gs, ge, z, neg, seed tensor.Operand, tau float64) {
	const op = "NTXentBack"
	cpuCap[tensor.ContrastiveBackend]().NTXentBack(unwrapOp(op, dz), unwrapOp(op, gs), unwrapOpt(op, ge),
		unwrapOp(op, z), unwrapOpt(op, neg), unwrapOp(op, seed), tau)
}
