package hostless

import "github.com/duel-ssl/duel/tensor"

var _ tensor.ActivationBackend = Fused{}

// ReLU runs the CPU's ReLU on the unwrapped handles.
func (Fused) ReLU(y, x tensor.Operand) {
	const op = "ReLU"
	cpuCap[tensor.ActivationBackend]().ReLU(unwrapOp(op, y), unwrapOp(op, x))
}

// AddReLU runs the CPU's fused add+ReLU on the unwrapped handles.
func (Fused) AddReLU(y, a, b tensor.Operand) {
	const op = "AddReLU"
	cpuCap[tensor.ActivationBackend]().AddReLU(unwrapOp(op, y), unwrapOp(op, a), unwrapOp(op, b))
}

// ReLUBack runs the CPU's ReLU backward on the unwrapped handles.
func (Fused) ReLUBack(dx, dy, y tensor.Operand, acc bool) {
	const op = "ReLUBack"
	cpuCap[tensor.ActivationBackend]().ReLUBack(unwrapOp(op, dx), unwrapOp(op, dy), unwrapOp(op, y), acc)
}
