package train

import (
	"fmt"
	"strings"

	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
)

// ResolveDevice returns the device a run computes on for the name given by
// the user or a test: "" and "cpu" are the CPU; any other registered
// backend name ("cuda", "hostlessfused") is that backend's device 0, and a
// full device name ("cuda:0") is kept. A name without a registered backend
// is an error naming the registered ones. The CUDA backend registers
// itself when cuda.Available succeeds: call it first.
func ResolveDevice(name string) (tensor.Device, error) {
	if name == "" || name == string(tensor.CPU) {
		return tensor.CPU, nil
	}
	dev := tensor.Device(name)
	if !strings.Contains(name, ":") {
		dev = tensor.Device(name + ":0")
	}
	if _, err := tensor.Lookup(dev.BackendName()); err != nil {
		return "", fmt.Errorf("--device %s: %w", name, err)
	}
	return dev, nil
}

// capability is an optional tensor.Backend interface that some layer
// needs because it has no composition of core operations to fall back on.
type capability struct {
	what, iface string
	has         func(tensor.Backend) bool
}

var (
	convCap = capability{"convolution", "tensor.ConvBackend",
		func(b tensor.Backend) bool { _, ok := b.(tensor.ConvBackend); return ok }}
	batchNormCap = capability{"batch norm", "tensor.BatchNormBackend",
		func(b tensor.Backend) bool { _, ok := b.(tensor.BatchNormBackend); return ok }}
	poolCap = capability{"pooling", "tensor.PoolBackend",
		func(b tensor.Backend) bool { _, ok := b.(tensor.PoolBackend); return ok }}
)

// needs lists the capabilities the layers of the modules require, in a
// fixed order. Every other layer (Linear, the activations, the losses,
// the optimizers, the memory negatives) runs on the core Backend through
// its fallback.
func needs(mods ...nn.Module) []capability {
	var conv, bn, pool bool
	for _, m := range mods {
		for _, nm := range nn.Modules(m) {
			switch nm.Module.(type) {
			case *nn.Conv2d:
				conv = true
			case *nn.BatchNorm:
				bn = true
			case *nn.MaxPool2d, *nn.AdaptiveAvgPool2d:
				pool = true
			}
		}
	}
	var out []capability
	for _, c := range []struct {
		on  bool
		cap capability
	}{{conv, convCap}, {bn, batchNormCap}, {pool, poolCap}} {
		if c.on {
			out = append(out, c.cap)
		}
	}
	return out
}

// checkCapabilities returns nil when dev's backend can run every module
// of mods, and otherwise one line naming the device, the model (what) and
// every missing capability, e.g.
//
//	--device cuda: the cuda backend cannot run resnet18 (dmoco) yet: no convolution (tensor.ConvBackend), batch norm (tensor.BatchNormBackend); use --device cpu
//
// The check is made before anything is placed or computed, so that a
// missing kernel is an error, not a panic in the middle of a step.
func checkCapabilities(dev tensor.Device, what string, mods ...nn.Module) error {
	if dev == tensor.CPU || dev == "" {
		return nil
	}
	b, err := tensor.Lookup(dev.BackendName())
	if err != nil {
		return fmt.Errorf("--device %s: %w", dev.BackendName(), err)
	}
	var missing []string
	for _, c := range needs(mods...) {
		if !c.has(b) {
			missing = append(missing, c.what+" ("+c.iface+")")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &CapabilityError{Device: dev, Model: what, Missing: missing}
}

// CapabilityError is the refusal of a device whose backend lacks
// capabilities a model's layers need (Train, LoadRunOn). Callers that
// wrap errors with a file name can find it with errors.As and report it
// alone: it names the device already.
type CapabilityError struct {
	Device  tensor.Device
	Model   string   // "resnet18 (dmoco)"
	Missing []string // "convolution (tensor.ConvBackend)", ...
}

// Error returns one line naming the device, the model and what is missing.
func (e *CapabilityError) Error() string {
	return fmt.Sprintf("--device %s: the %s backend cannot run %s yet: no %s; use --device cpu",
		e.Device.BackendName(), e.Device.BackendName(), e.Model, strings.Join(e.Missing, ", "))
}

// placeMethod checks that dev can run every part of m (checkCapabilities)
// and moves them there (nn.To). what names the model in errors.
func placeMethod(m ssl.Method, dev tensor.Device, what string) error {
	if dev == tensor.CPU || dev == "" {
		return nil
	}
	parts := m.Parts()
	mods := make([]nn.Module, len(parts))
	for i, p := range parts {
		mods[i] = p.Module
	}
	if err := checkCapabilities(dev, what, mods...); err != nil {
		return err
	}
	for _, p := range parts {
		if err := nn.To(p.Module, dev); err != nil {
			return fmt.Errorf("--device %s: %w", dev.BackendName(), err)
		}
	}
	return nil
}
