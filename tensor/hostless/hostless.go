// Package hostless is a test device: a tensor.Backend that computes with the
// CPU backend's kernels but keeps every buffer behind an opaque handle, as a
// GPU backend does. Its tensors have no host storage, so any host access
// by code above the backend (Data, Storage, Map, indexing Operand().Buf.Host)
// fails loudly: Data, Storage and Map panic with a *tensor.DeviceError
// wrapping tensor.ErrNoHostStorage and naming the operation, exactly as on
// a CUDA device. Values cross to and from the host only through the
// explicit transfers of package tensor (Tensor.To, At, Set, Item) and
// Backend.CopyIn/CopyOut.
//
// Importing the package registers the device; only tests import it:
//
//	import "github.com/duel-ssl/duel/tensor/hostless"
//
//	x, err := w.To(hostless.Device)   // computes like the CPU, holds no host slice
//
// Two backends are registered. "hostless" implements tensor.Backend and
// nothing else, so code above it must get by with the core contract (the
// generic fallbacks of optional capabilities such as
// tensor.OptimizerBackend). "hostlessfused" is the same device with every
// optional capability the CPU backend has, delegated to the CPU kernels on
// the unwrapped handles, so results there equal the CPU's bit for bit while
// still proving that nothing above the backend reads host memory.
package hostless

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// The names and devices of the two registered backends.
const (
	// Name is the backend with the core contract only.
	Name = "hostless"
	// FusedName is the backend with the CPU's optional capabilities too.
	FusedName = "hostlessfused"
	// Device is a device served by the Name backend.
	Device tensor.Device = Name + ":0"
	// FusedDevice is a device served by the FusedName backend.
	FusedDevice tensor.Device = FusedName + ":0"
)

func init() {
	tensor.Register(Backend{})
	tensor.Register(Fused{})
}

// handle is the opaque device storage: the elements live in v, which only
// this package reads.
type handle struct{ v []float32 }

// cpu returns the CPU backend that does the arithmetic.
func cpu() tensor.Backend {
	b, err := tensor.Lookup("cpu")
	if err != nil {
		panic(fmt.Sprintf("hostless: %v", err))
	}
	return b
}

// unwrap returns a host view of b for the CPU kernels. A buffer that is not
// this device's storage (host memory, another device's handle) is a bug of
// the caller: it panics with a *tensor.DeviceError naming the method.
func unwrap(op string, b tensor.Buffer) tensor.Buffer {
	h, ok := b.Dev.(*handle)
	if !ok || b.Host != nil {
		panic(&tensor.DeviceError{Backend: Name, Op: op,
			Err: fmt.Errorf("buffer is not hostless device storage (host %d elements, handle %T)", len(b.Host), b.Dev)})
	}
	return tensor.Buffer{Host: h.v}
}

// unwrapOp returns o with its buffer unwrapped.
func unwrapOp(op string, o tensor.Operand) tensor.Operand {
	o.Buf = unwrap(op, o.Buf)
	return o
}

// Backend is the host-less device with the core tensor.Backend contract
// only. The zero value is ready to use.
type Backend struct{}

// Name returns "hostless".
func (Backend) Name() string { return Name }

// Alloc returns zeroed storage for n elements behind a new handle.
func (Backend) Alloc(n int) tensor.Buffer { return tensor.Buffer{Dev: &handle{make([]float32, n)}} }

// CopyIn copies host values into dst starting at element off.
func (Backend) CopyIn(dst tensor.Buffer, off int, src []float32) {
	d := unwrap("CopyIn", dst)
	if off < 0 || off+len(src) > len(d.Host) {
		panic(fmt.Sprintf("hostless: Backend.CopyIn: %d elements at %d into a buffer of %d", len(src), off, len(d.Host)))
	}
	cpu().CopyIn(d, off, src)
}

// CopyOut copies len(dst) elements starting at element off to the host.
func (Backend) CopyOut(dst []float32, src tensor.Buffer, off int) {
	s := unwrap("CopyOut", src)
	if off < 0 || off+len(dst) > len(s.Host) {
		panic(fmt.Sprintf("hostless: Backend.CopyOut: %d elements at %d from a buffer of %d", len(dst), off, len(s.Host)))
	}
	cpu().CopyOut(dst, s, off)
}

// Fill sets every element of dst to v.
func (Backend) Fill(dst tensor.Operand, v float32) { cpu().Fill(unwrapOp("Fill", dst), v) }

// Unary computes dst = op(src, p) elementwise.
func (Backend) Unary(op tensor.UnaryOp, dst, src tensor.Operand, p float32) {
	cpu().Unary(op, unwrapOp("Unary", dst), unwrapOp("Unary", src), p)
}

// Binary computes dst = op(a, b) elementwise.
func (Backend) Binary(op tensor.BinaryOp, dst, a, b tensor.Operand) {
	cpu().Binary(op, unwrapOp("Binary", dst), unwrapOp("Binary", a), unwrapOp("Binary", b))
}

// AddScaled computes dst += alpha*x.
func (Backend) AddScaled(dst tensor.Operand, alpha float32, x tensor.Operand) {
	cpu().AddScaled(unwrapOp("AddScaled", dst), alpha, unwrapOp("AddScaled", x))
}

// Reduce reduces src into dst.
func (Backend) Reduce(op tensor.ReduceOp, dst, src tensor.Operand) {
	cpu().Reduce(op, unwrapOp("Reduce", dst), unwrapOp("Reduce", src))
}

// ArgMax stores the index of every line's largest element into dst (host
// indices, as the contract says).
func (Backend) ArgMax(dst []int, src tensor.Operand, axis int) {
	cpu().ArgMax(dst, unwrapOp("ArgMax", src), axis)
}

// Gemm computes a batched matrix product.
func (Backend) Gemm(g tensor.GemmArgs) {
	g.A, g.B, g.C = unwrap("Gemm", g.A), unwrap("Gemm", g.B), unwrap("Gemm", g.C)
	cpu().Gemm(g)
}

// Im2Col writes the im2col matrix of an image.
func (Backend) Im2Col(dst tensor.Buffer, dstOff int, src tensor.Buffer, srcOff int, g tensor.ConvGeom) {
	cpu().Im2Col(unwrap("Im2Col", dst), dstOff, unwrap("Im2Col", src), srcOff, g)
}

// Col2Im adds an im2col matrix back into its image.
func (Backend) Col2Im(dst tensor.Buffer, dstOff int, col tensor.Buffer, colOff int, g tensor.ConvGeom) {
	cpu().Col2Im(unwrap("Col2Im", dst), dstOff, unwrap("Col2Im", col), colOff, g)
}

// Fused is the host-less device with the CPU backend's optional
// capabilities as well, each delegated to the CPU kernels on the unwrapped
// handles. The zero value is ready to use.
type Fused struct{ Backend }

// Name returns "hostlessfused".
func (Fused) Name() string { return FusedName }

var _ tensor.OptimizerBackend = Fused{}

// cpuOptimizer returns the CPU backend's fused optimizer steps.
func cpuOptimizer() tensor.OptimizerBackend {
	ob, ok := cpu().(tensor.OptimizerBackend)
	if !ok {
		panic("hostless: the cpu backend has no tensor.OptimizerBackend")
	}
	return ob
}

// unwrapBuf unwraps a momentum buffer, which is absent without momentum.
func unwrapBuf(op string, buf tensor.Operand, momentum float64) tensor.Operand {
	if momentum == 0 {
		return tensor.Operand{}
	}
	return unwrapOp(op, buf)
}

// SGDStep runs the CPU's fused SGD step on the unwrapped handles.
func (Fused) SGDStep(param, grad, buf tensor.Operand, a tensor.SGDArgs) {
	cpuOptimizer().SGDStep(unwrapOp("SGDStep", param), unwrapOp("SGDStep", grad), unwrapBuf("SGDStep", buf, a.Momentum), a)
}

// LARSStep runs the CPU's fused LARS step on the unwrapped handles.
func (Fused) LARSStep(param, grad, buf tensor.Operand, a tensor.LARSArgs) {
	cpuOptimizer().LARSStep(unwrapOp("LARSStep", param), unwrapOp("LARSStep", grad), unwrapBuf("LARSStep", buf, a.Momentum), a)
}

// AdamStep runs the CPU's fused Adam step on the unwrapped handles.
func (Fused) AdamStep(param, grad, m, v tensor.Operand, a tensor.AdamArgs) {
	cpuOptimizer().AdamStep(unwrapOp("AdamStep", param), unwrapOp("AdamStep", grad), unwrapOp("AdamStep", m), unwrapOp("AdamStep", v), a)
}

// EMA runs the CPU's EMA on the unwrapped handles.
func (Fused) EMA(target, online tensor.Operand, m float64) {
	cpuOptimizer().EMA(unwrapOp("EMA", target), unwrapOp("EMA", online), m)
}

var _ tensor.MultiOptimizerBackend = Fused{}

// unwrapOps unwraps every operand of a list; nil stays nil.
func unwrapOps(op string, ops []tensor.Operand) []tensor.Operand {
	if ops == nil {
		return nil
	}
	out := make([]tensor.Operand, len(ops))
	for i, o := range ops {
		out[i] = unwrapOp(op, o)
	}
	return out
}

// cpuMulti returns the CPU backend's multi-parameter steps.
func cpuMulti() tensor.MultiOptimizerBackend { return cpuOptimizer().(tensor.MultiOptimizerBackend) }

// SGDSteps runs the CPU's SGD steps on the unwrapped handles.
func (Fused) SGDSteps(params, grads, bufs []tensor.Operand, a tensor.SGDArgs) {
	if a.Momentum == 0 {
		bufs = nil // absent buffers are zero Operands, which do not unwrap
	}
	cpuMulti().SGDSteps(unwrapOps("SGDSteps", params), unwrapOps("SGDSteps", grads), unwrapOps("SGDSteps", bufs), a)
}

// AdamSteps runs the CPU's Adam steps on the unwrapped handles.
func (Fused) AdamSteps(params, grads, ms, vs []tensor.Operand, a tensor.AdamArgs) {
	const op = "AdamSteps"
	cpuMulti().AdamSteps(unwrapOps(op, params), unwrapOps(op, grads), unwrapOps(op, ms), unwrapOps(op, vs), a)
}

// EMAs runs the CPU's EMAs on the unwrapped handles.
func (Fused) EMAs(targets, onlines []tensor.Operand, m float64) {
	cpuMulti().EMAs(unwrapOps("EMAs", targets), unwrapOps("EMAs", onlines), m)
}

// ZeroAll zeroes the operands through the CPU's ZeroAll on the unwrapped
// handles.
func (Fused) ZeroAll(xs []tensor.Operand) { cpuMulti().ZeroAll(unwrapOps("ZeroAll", xs)) }
