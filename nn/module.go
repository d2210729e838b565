// Package nn holds neural-network layers built on the autograd tape:
// Linear, Conv2d, BatchNorm, pooling, activations and containers, with
// parameter and buffer names that match PyTorch's state_dict.
//
// A layer is a Module: a Forward function recording on an autograd.Tape (nil
// tape: no gradient) plus a list of members (parameters, buffers, child
// modules) in PyTorch's registration order. The tree functions in this file
// (NamedParameters, StateDict, LoadStateDict, Train, ...) walk that list, so
// a network built from these layers has exactly torchvision's names.
//
// Each layer's forward and backward are its own autograd ops; their
// arithmetic is in the kernel packages, nn holds the layers. Every layer
// computes through its input's tensor.Backend, on any device: Linear and
// the pools through tensor.LinearBackend and tensor.PoolBackend
// (kernels/linear and kernels/pool on the CPU), Conv2d and BatchNorm
// through tensor.ConvBackend and tensor.BatchNormBackend (kernels/conv,
// which also chooses the convolution algorithms, and kernels/batchnorm on
// the CPU), as do ReLU, AddRelu, Flatten, Identity and Sequential. Linear
// composes its passes from core Backend operations on a backend without
// its capability; the pools, Conv2d and BatchNorm have no such composition
// and panic naming the backend and the missing capability. On the CPU,
// outputs and activation gradients come from an Arena (arena.go); only
// that arena, and the CPU paths of ReLU and AddRelu, touch host slices.
//
// # Layout
//
// Activations have PyTorch's shapes, (N, C, H, W) for images, but not
// always its memory layout (layout.go). Conv2d writes its output
// channel-major (CNHW): a Permute(1, 0, 2, 3) view of a contiguous
// (C, N, H, W) tensor, so that the whole batch is one GEMM operand and each
// channel one block for BatchNorm. BatchNorm, ReLU, AddRelu and the pools
// keep their input's layout, so a ResNet's activations stay channel-major
// from the first convolution to the pooling; Linear and Flatten take any
// layout (Flatten's output is contiguous). Every layer accepts either
// layout. The layouts are the same on every device: the capabilities of
// Conv2d and BatchNorm take NCHW or CNHW operands (see their docs). Such outputs are not contiguous: Data panics on them; call
// Contiguous first to get NCHW data (At and the tensor ops follow the
// strides and need nothing).
package nn

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// Module is a layer or a network of layers.
type Module interface {
	// Forward computes the module's output for x, recording on tp when tp
	// is non-nil (a nil tape is no-grad mode).
	Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var
	// Members lists the module's own parameters and buffers and its direct
	// submodules in PyTorch's registration order. Leaf layers without
	// state return nil.
	Members() []Member
}

// Member is one named entry of a module: exactly one of Param, Buffer and
// Module is set.
type Member struct {
	Name   string
	Param  *autograd.Var
	Buffer *Buffer
	Module Module
}

// Buffer is persistent state that is not trained by gradient descent
// (BatchNorm's running statistics).
type Buffer struct {
	Tensor *tensor.Tensor
	// Int64 marks a buffer PyTorch stores as int64 (num_batches_tracked).
	// The value is held as a float32, exact up to 2^24.
	Int64 bool
}

// Trainer is implemented by modules whose forward differs between training
// and evaluation (BatchNorm). Train sets the mode on a whole tree.
type Trainer interface {
	SetTraining(training bool)
}

// NamedVar is a parameter with its dotted name ("layer1.0.conv1.weight").
type NamedVar struct {
	Name string
	Var  *autograd.Var
}

// NamedBuffer is a buffer with its dotted name ("bn1.running_mean").
type NamedBuffer struct {
	Name   string
	Buffer *Buffer
}

// NamedModule is a module with its dotted name ("" for the root).
type NamedModule struct {
	Name   string
	Module Module
}

// join returns prefix.name, or name when prefix is empty.
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// Modules returns m and all its descendants in pre-order, as PyTorch's
// named_modules: the root has the empty name.
func Modules(m Module) []NamedModule {
	var out []NamedModule
	var walk func(prefix string, m Module)
	walk = func(prefix string, m Module) {
		out = append(out, NamedModule{prefix, m})
		for _, mb := range m.Members() {
			if mb.Module != nil {
				walk(join(prefix, mb.Name), mb.Module)
			}
		}
	}
	walk("", m)
	return out
}

// NamedParameters returns every parameter of the tree in PyTorch's
// named_parameters order.
func NamedParameters(m Module) []NamedVar {
	var out []NamedVar
	for _, nm := range Modules(m) {
		for _, mb := range nm.Module.Members() {
			if mb.Param != nil {
				out = append(out, NamedVar{join(nm.Name, mb.Name), mb.Param})
			}
		}
	}
	return out
}

// Parameters returns the parameters of the tree in NamedParameters order.
func Parameters(m Module) []*autograd.Var {
	nps := NamedParameters(m)
	out := make([]*autograd.Var, len(nps))
	for i, np := range nps {
		out[i] = np.Var
	}
	return out
}

// NamedBuffers returns every buffer of the tree in PyTorch's named_buffers
// order.
func NamedBuffers(m Module) []NamedBuffer {
	var out []NamedBuffer
	for _, nm := range Modules(m) {
		for _, mb := range nm.Module.Members() {
			if mb.Buffer != nil {
				out = append(out, NamedBuffer{join(nm.Name, mb.Name), mb.Buffer})
			}
		}
	}
	return out
}

// NumParameters returns the number of trainable scalars in the tree.
func NumParameters(m Module) int {
	n := 0
	for _, p := range NamedParameters(m) {
		n += p.Var.Value.Numel()
	}
	return n
}

// Train switches every module of the tree to training (true) or evaluation
// (false) mode, like PyTorch's module.train(mode).
func Train(m Module, training bool) {
	for _, nm := range Modules(m) {
		if t, ok := nm.Module.(Trainer); ok {
			t.SetTraining(training)
		}
	}
}

// ZeroGrad forgets the accumulated gradient of every parameter of the tree.
func ZeroGrad(m Module) {
	for _, p := range NamedParameters(m) {
		p.Var.ZeroGrad()
	}
}

// NameParameters sets each parameter's Var.Name to its dotted name, so error
// messages and optimisers can refer to it.
func NameParameters(m Module) {
	for _, p := range NamedParameters(m) {
		p.Var.Name = p.Name
	}
}

// To places the tree on dev: every parameter's and buffer's tensor is
// replaced by a copy on dev (tensors already there are kept, shared ones
// are copied once), and the parameters' gradients are dropped. The
// modules keep their *autograd.Var and *Buffer, so references to those
// (optimizers, momentum encoders) follow; build optimizers after To, as
// their state lives on the parameters' device. Nothing is modified when
// an error (a device without a registered backend) is returned.
func To(m Module, dev tensor.Device) error {
	moved := map[*tensor.Tensor]*tensor.Tensor{}
	move := func(name string, t *tensor.Tensor) error {
		if _, ok := moved[t]; ok {
			return nil
		}
		y, err := t.To(dev)
		if err != nil {
			return fmt.Errorf("placing %s on %s: %w", name, dev, err)
		}
		moved[t] = y
		return nil
	}
	params, bufs := NamedParameters(m), NamedBuffers(m)
	for _, p := range params {
		if err := move(p.Name, p.Var.Value); err != nil {
			return err
		}
	}
	for _, b := range bufs {
		if err := move(b.Name, b.Buffer.Tensor); err != nil {
			return err
		}
	}
	for _, p := range params {
		if y := moved[p.Var.Value]; y != p.Var.Value {
			p.Var.Value, p.Var.Grad = y, nil
		}
	}
	for _, b := range bufs {
		b.Buffer.Tensor = moved[b.Buffer.Tensor]
	}
	return nil
}

// DeviceOf returns the device of the tree's first parameter, or of its
// first buffer when it has no parameters, or tensor.CPU for a tree without
// state: where a module placed by To computes.
func DeviceOf(m Module) tensor.Device {
	if ps := NamedParameters(m); len(ps) > 0 {
		return ps[0].Var.Value.Device()
	}
	if bs := NamedBuffers(m); len(bs) > 0 {
		return bs[0].Buffer.Tensor.Device()
	}
	return tensor.CPU
}
