package tensor

import "fmt"

// Neg returns -a.
func Neg(a *Tensor) *Tensor { return unary("Neg", OpNeg, a, 0) }

// Exp returns e^a elementwise.
func Exp(a *Tensor) *Tensor { return unary("Exp", OpExp, a, 0) }

// Log returns the natural logarithm of a elementwise.
func Log(a *Tensor) *Tensor { return unary("Log", OpLog, a, 0) }

// Sqrt returns the square root of a elementwise.
func Sqrt(a *Tensor) *Tensor { return unary("Sqrt", OpSqrt, a, 0) }

// Abs returns |a| elementwise.
func Abs(a *Tensor) *Tensor { return unary("Abs", OpAbs, a, 0) }

// Relu returns max(a, 0) elementwise (0 for NaN).
func Relu(a *Tensor) *Tensor { return unary("Relu", OpRelu, a, 0) }

// Tanh returns tanh(a) elementwise.
func Tanh(a *Tensor) *Tensor { return unary("Tanh", OpTanh, a, 0) }

// Sigmoid returns 1/(1+e^-a) elementwise.
func Sigmoid(a *Tensor) *Tensor { return unary("Sigmoid", OpSigmoid, a, 0) }

// Square returns a² elementwise.
func Square(a *Tensor) *Tensor { return unary("Square", OpSquare, a, 0) }

// Sign returns -1, 0 or 1 by the sign of each element (NaN stays NaN).
func Sign(a *Tensor) *Tensor { return unary("Sign", OpSign, a, 0) }

// AddScalar returns a + s elementwise.
func AddScalar(a *Tensor, s float32) *Tensor { return unary("AddScalar", OpAddScalar, a, s) }

// MulScalar returns a * s elementwise.
func MulScalar(a *Tensor, s float32) *Tensor { return unary("MulScalar", OpMulScalar, a, s) }

// PowScalar returns a^p elementwise.
func PowScalar(a *Tensor, p float32) *Tensor { return unary("PowScalar", OpPowScalar, a, p) }

func unary(name string, op UnaryOp, a *Tensor, p float32) *Tensor {
	be := backendOf(name, a)
	out := empty(be, a.device, a.shape)
	be.Unary(op, out.operand(), a.operand(), p)
	return out
}

// Map returns f applied to every element of a, which must be on a host
// device. It is for tests and cold paths: f is called once per element.
func Map(a *Tensor, f func(float32) float32) *Tensor {
	a.needHost("Map")
	out := New(a.shape...)
	d := out.data
	i := 0
	forEachOffset(a.shape, a.strides, a.offset, func(off int) {
		d[i] = f(a.data[off])
		i++
	})
	return out
}

// onDevice reports whether t's storage is device memory rather than host
// memory.
func (t *Tensor) onDevice() bool { return t.data == nil && t.handle != nil }

// needHost panics with a *DeviceError wrapping ErrNoHostStorage unless t's
// storage is host memory: code that reads or writes host slices fails
// loudly on a device tensor instead of seeing no elements.
func (t *Tensor) needHost(op string) {
	if t.onDevice() {
		panic(&DeviceError{Backend: t.device.BackendName(), Op: op,
			Err: fmt.Errorf("tensor on device %s: %w; use To(tensor.CPU)", t.device, ErrNoHostStorage)})
	}
}
