package tensor

import (
	"fmt"
	"strings"
)

// Tensor is a strided view of float32 storage on one device. Several tensors
// may share storage (views); operations never modify their inputs unless
// their name says so (the *Into and *InPlace forms).
type Tensor struct {
	shape   []int
	strides []int
	offset  int
	data    []float32 // host storage; on the CPU device this is the tensor's memory
	handle  any       // device storage handle (Buffer.Dev) on non-host devices
	device  Device
}

// Device names where a tensor's storage lives ("cpu", "cuda:0").
type Device string

// CPU is the host device.
const CPU Device = "cpu"

// New returns a zero-filled contiguous tensor of the given shape on the CPU.
func New(shape ...int) *Tensor {
	n := checkShape("New", shape)
	return &Tensor{shape: cloneInts(shape), strides: contiguousStrides(shape), data: make([]float32, n), device: CPU}
}

// Zeros is New: a zero-filled tensor.
func Zeros(shape ...int) *Tensor { return New(shape...) }

// ZerosOn returns a zero-filled contiguous tensor of the given shape on
// dev, allocated by its backend. It panics if no backend serves dev.
func ZerosOn(dev Device, shape ...int) *Tensor {
	return empty(backendOf("ZerosOn", &Tensor{device: dev}), dev, shape)
}

// Full returns a contiguous tensor of the given shape filled with v.
func Full(v float32, shape ...int) *Tensor {
	t := New(shape...)
	for i := range t.data {
		t.data[i] = v
	}
	return t
}

// Ones returns a contiguous tensor of ones.
func Ones(shape ...int) *Tensor { return Full(1, shape...) }

// FromSlice wraps data (not copied) as a contiguous tensor of the given shape.
// It panics if len(data) differs from the shape's element count.
func FromSlice(data []float32, shape ...int) *Tensor {
	n := checkShape("FromSlice", shape)
	if len(data) != n {
		panic(fmt.Sprintf("tensor.FromSlice: %d values for shape %v (%d elements)", len(data), shape, n))
	}
	return &Tensor{shape: cloneInts(shape), strides: contiguousStrides(shape), data: data, device: CPU}
}

// Scalar returns a 0-d tensor holding v.
func Scalar(v float32) *Tensor { return FromSlice([]float32{v}) }

// Shape returns the tensor's shape. The caller must not modify it.
func (t *Tensor) Shape() []int { return t.shape }

// Strides returns the strides in elements. The caller must not modify them.
func (t *Tensor) Strides() []int { return t.strides }

// Offset returns the position of the first element in the storage.
func (t *Tensor) Offset() int { return t.offset }

// Device returns where the tensor's storage lives.
func (t *Tensor) Device() Device { return t.device }

// NDim returns the number of dimensions.
func (t *Tensor) NDim() int { return len(t.shape) }

// Dim returns the size of dimension i; negative i counts from the end.
func (t *Tensor) Dim(i int) int { return t.shape[t.axis("Dim", i)] }

// Numel returns the number of elements.
func (t *Tensor) Numel() int { return numel(t.shape) }

// Storage returns the whole host storage the tensor views (shared, not
// copied). Like Data, it panics with a *DeviceError wrapping
// ErrNoHostStorage on a device tensor.
func (t *Tensor) Storage() []float32 {
	t.needHost("Storage")
	return t.data
}

// SharesStorage reports whether t and u view the same storage (the same
// host slice, or the same device handle; device handles are compared with
// ==, so a backend's Buffer.Dev values must be comparable, as pointers are).
// It reads no elements and works on any device.
func (t *Tensor) SharesStorage(u *Tensor) bool {
	if t.device != u.device {
		return false
	}
	if t.onDevice() || u.onDevice() {
		return t.handle != nil && t.handle == u.handle
	}
	return len(t.data) > 0 && len(u.data) > 0 && &t.data[0] == &u.data[0]
}

// IsContiguous reports whether the elements are laid out densely in row-major order.
func (t *Tensor) IsContiguous() bool {
	s := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.strides[i] != s {
			return false
		}
		s *= t.shape[i]
	}
	return true
}

// Data returns the elements of a contiguous host tensor as a slice sharing
// its storage. It panics if the tensor is not contiguous (call Contiguous
// first) or lives on a device without host storage (call To(CPU) first).
func (t *Tensor) Data() []float32 {
	t.needHost("Data")
	if !t.IsContiguous() {
		panic(fmt.Sprintf("tensor.Data: tensor of shape %v strides %v is not contiguous", t.shape, t.strides))
	}
	return t.data[t.offset : t.offset+t.Numel()]
}

// At returns the element at the given index. On a device it copies the
// element to the host.
func (t *Tensor) At(idx ...int) float32 {
	off := t.index("At", idx)
	if t.onDevice() {
		v := make([]float32, 1)
		backendOf("At", t).CopyOut(v, t.operand().Buf, off)
		return v[0]
	}
	return t.data[off]
}

// Set stores v at the given index.
func (t *Tensor) Set(v float32, idx ...int) {
	off := t.index("Set", idx)
	if t.onDevice() {
		backendOf("Set", t).CopyIn(t.operand().Buf, off, []float32{v})
		return
	}
	t.data[off] = v
}

// Item returns the value of a one-element tensor.
func (t *Tensor) Item() float32 {
	if t.Numel() != 1 {
		panic(fmt.Sprintf("tensor.Item: tensor of shape %v has %d elements, expected 1", t.shape, t.Numel()))
	}
	return t.At(make([]int, len(t.shape))...)
}

// String formats small tensors fully and large ones by shape; tensors off
// the CPU name their device.
func (t *Tensor) String() string {
	dev := ""
	if t.device != CPU && t.device != "" {
		dev = " on " + string(t.device)
	}
	if t.Numel() > 64 {
		return fmt.Sprintf("Tensor%v%s", t.shape, dev)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Tensor%v%v%s", t.shape, hostValues(t), dev)
	return b.String()
}

func (t *Tensor) index(op string, idx []int) int {
	if len(idx) != len(t.shape) {
		panic(fmt.Sprintf("tensor.%s: %d indices for shape %v", op, len(idx), t.shape))
	}
	off := t.offset
	for i, v := range idx {
		if v < 0 || v >= t.shape[i] {
			panic(fmt.Sprintf("tensor.%s: index %v out of range for shape %v", op, idx, t.shape))
		}
		off += v * t.strides[i]
	}
	return off
}

// axis normalises a possibly negative axis.
func (t *Tensor) axis(op string, i int) int {
	n := len(t.shape)
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		panic(fmt.Sprintf("tensor.%s: axis %d out of range for %d dimensions", op, i, n))
	}
	return i
}

func checkShape(op string, shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("tensor.%s: negative dimension in shape %v", op, shape))
		}
		n *= d
	}
	return n
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func contiguousStrides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

func cloneInts(x []int) []int { return append([]int(nil), x...) }
