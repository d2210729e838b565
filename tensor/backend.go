package tensor

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Buffer is storage owned by a Backend. Host backends keep the elements in
// Host; device backends keep an opaque handle to device memory in Dev (and
// leave Host nil).
type Buffer struct {
	Host []float32
	Dev  any
}

// Operand is a strided view of a Buffer handed to a Backend: element
// (i0, i1, ...) lives at Offset + i0*Strides[0] + i1*Strides[1] + ...
// Strides may be 0 (broadcast dimensions).
type Operand struct {
	Buf     Buffer
	Offset  int
	Shape   []int
	Strides []int
}

// UnaryOp names an elementwise operation of one operand and an optional
// scalar parameter p.
type UnaryOp int

// The unary operations. p is the scalar parameter where one is used.
const (
	OpCopy      UnaryOp = iota // x
	OpNeg                      // -x
	OpExp                      // e^x
	OpLog                      // ln x
	OpSqrt                     // √x
	OpAbs                      // |x|
	OpRelu                     // max(x, 0)
	OpTanh                     // tanh x
	OpSigmoid                  // 1/(1+e^-x)
	OpSquare                   // x²
	OpSign                     // -1, 0 or 1 (NaN stays NaN)
	OpAddScalar                // x + p
	OpMulScalar                // x * p
	OpPowScalar                // x^p
	numUnaryOps
)

var unaryNames = [...]string{"Copy", "Neg", "Exp", "Log", "Sqrt", "Abs", "Relu", "Tanh", "Sigmoid", "Square", "Sign", "AddScalar", "MulScalar", "PowScalar"}

// String returns the operation's name.
func (op UnaryOp) String() string {
	if op >= 0 && op < numUnaryOps {
		return unaryNames[op]
	}
	return fmt.Sprintf("UnaryOp(%d)", int(op))
}

// BinaryOp names an elementwise operation of two operands.
type BinaryOp int

// The binary operations.
const (
	OpAdd     BinaryOp = iota // a + b
	OpSub                     // a - b
	OpMul                     // a * b
	OpDiv                     // a / b
	OpMaximum                 // max(a, b)
	OpMinimum                 // min(a, b)
	numBinaryOps
)

var binaryNames = [...]string{"Add", "Sub", "Mul", "Div", "Maximum", "Minimum"}

// String returns the operation's name.
func (op BinaryOp) String() string {
	if op >= 0 && op < numBinaryOps {
		return binaryNames[op]
	}
	return fmt.Sprintf("BinaryOp(%d)", int(op))
}

// ReduceOp names a reduction.
type ReduceOp int

// The reductions. Over zero elements Sum is 0, Mean is NaN, Max is -Inf and
// Min is +Inf.
const (
	ReduceSum ReduceOp = iota
	ReduceMean
	ReduceMax
	ReduceMin
	numReduceOps
)

var reduceNames = [...]string{"Sum", "Mean", "Max", "Min"}

// String returns the operation's name.
func (op ReduceOp) String() string {
	if op >= 0 && op < numReduceOps {
		return reduceNames[op]
	}
	return fmt.Sprintf("ReduceOp(%d)", int(op))
}

// GemmArgs describes a (batched) row-major matrix product
//
//	C[i] = Alpha*op(A[i])*op(B[i]) + Beta*C[i]   for i < Batch
//
// where op(X) is X or its transpose, op(A) is M x K, op(B) is K x N and C is
// M x N. Matrix i of A starts at OffA + i*StrideA (StrideA may be 0 to
// broadcast one matrix over the batch), and likewise for B and C. LDA, LDB
// and LDC are row strides as stored. Beta == 0 means C is not read.
type GemmArgs struct {
	TransA, TransB            bool
	M, N, K                   int
	Alpha, Beta               float32
	A, B, C                   Buffer
	OffA, OffB, OffC          int
	LDA, LDB, LDC             int
	Batch                     int
	StrideA, StrideB, StrideC int
}

// ConvGeom is the geometry of a 2-d convolution over one C x H x W image
// (NCHW layout) with a KH x KW kernel. Its im2col matrix has C*KH*KW rows
// and OH*OW columns; row (c*KH+i)*KW+j, column oy*OW+ox holds
// x[c, oy*StrideH+i-PadH, ox*StrideW+j-PadW], or 0 outside the image.
type ConvGeom struct {
	C, H, W          int
	KH, KW           int
	StrideH, StrideW int
	PadH, PadW       int
}

// OutH returns the output height.
func (g ConvGeom) OutH() int { return ConvOutSize(g.H, g.KH, g.StrideH, g.PadH) }

// OutW returns the output width.
func (g ConvGeom) OutW() int { return ConvOutSize(g.W, g.KW, g.StrideW, g.PadW) }

// Backend computes on the storage of one kind of device. Methods work on
// storage plus offsets and strides, never on Tensors, so host and device
// implementations share one contract, checked by package
// tensor/backendtest against the float64 oracle in tensor/reference.
//
// Shapes handed to a backend are already checked by package tensor; a
// backend may panic on inconsistent arguments. Destination operands never
// overlap their sources unless they are identical views (in-place ops).
// A device failure (out of memory, a driver error) panics with a
// *DeviceError, which CatchDeviceError turns back into an error.
type Backend interface {
	// Name is the registry key and the device prefix: a tensor on device
	// "cuda:1" runs on the backend named "cuda".
	Name() string
	// Alloc returns zeroed storage for n elements. A backend that also
	// implements Releaser takes storage back when its tensor is released
	// ((*Tensor).Release); storage never released is reclaimed once its
	// handle becomes unreachable (runtime.AddCleanup on the handle).
	Alloc(n int) Buffer
	// CopyIn copies host values into storage starting at element off.
	CopyIn(dst Buffer, off int, src []float32)
	// CopyOut copies len(dst) elements starting at element off to the host.
	CopyOut(dst []float32, src Buffer, off int)
	// Fill sets every element of dst to v.
	Fill(dst Operand, v float32)
	// Unary computes dst = op(src, p) elementwise; dst and src have the same shape.
	Unary(op UnaryOp, dst, src Operand, p float32)
	// Binary computes dst = op(a, b) elementwise; all three have dst's
	// shape (broadcast inputs carry 0 strides).
	Binary(op BinaryOp, dst, a, b Operand)
	// AddScaled computes dst += alpha*x; both have the same shape.
	AddScaled(dst Operand, alpha float32, x Operand)
	// Reduce reduces src into dst, which has src's rank and, on every axis,
	// either src's size or 1 (the axes reduced over).
	Reduce(op ReduceOp, dst, src Operand)
	// ArgMax stores into dst the index along axis of the largest element of
	// every line of src, in row-major order over the other axes (first
	// index on ties). The axis is not empty.
	ArgMax(dst []int, src Operand, axis int)
	// Gemm computes a batched matrix product.
	Gemm(g GemmArgs)
	// Im2Col writes the im2col matrix of the image at src[srcOff:] into
	// dst[dstOff:] (contiguous, C*KH*KW rows of OH*OW).
	Im2Col(dst Buffer, dstOff int, src Buffer, srcOff int, g ConvGeom)
	// Col2Im is the adjoint of Im2Col: it adds every element of the im2col
	// matrix at col[colOff:] into its image position in dst[dstOff:].
	Col2Im(dst Buffer, dstOff int, col Buffer, colOff int, g ConvGeom)
}

var registry = struct {
	sync.RWMutex
	m map[string]Backend
}{m: map[string]Backend{}}

// Register makes a backend available under its Name. It panics if the name
// is empty, contains ':' or is already registered, like database/sql.Register.
func Register(b Backend) {
	name := b.Name()
	if name == "" || strings.Contains(name, ":") {
		panic(fmt.Sprintf("tensor.Register: bad backend name %q", name))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[name]; dup {
		panic(fmt.Sprintf("tensor.Register: backend %q registered twice", name))
	}
	registry.m[name] = b
}

// Lookup returns the backend registered under name.
func Lookup(name string) (Backend, error) {
	registry.RLock()
	b, ok := registry.m[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("tensor: no backend %q (registered: %s)", name, strings.Join(Backends(), ", "))
	}
	return b, nil
}

// Backends returns the names of the registered backends, sorted.
func Backends() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.m))
	for n := range registry.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BackendName returns the name of the backend serving the device: the part
// before ':' ("cuda" for "cuda:0").
func (d Device) BackendName() string {
	if i := strings.IndexByte(string(d), ':'); i >= 0 {
		return string(d[:i])
	}
	return string(d)
}

// backendOf returns the backend computing on t's device, without a registry
// lookup for the CPU.
func backendOf(op string, t *Tensor) Backend {
	if t.device == CPU || t.device == "" {
		return cpuBackend
	}
	b, err := Lookup(t.device.BackendName())
	if err != nil {
		panic(fmt.Sprintf("tensor.%s: %v", op, err))
	}
	return b
}

// operand describes t for a Backend.
func (t *Tensor) operand() Operand {
	return Operand{Buf: Buffer{Host: t.data, Dev: t.handle}, Offset: t.offset, Shape: t.shape, Strides: t.strides}
}

// Operand describes t's storage, offset, shape and strides for calling its
// Backend directly (shared, not copied; the caller must not modify the
// shape or strides).
func (t *Tensor) Operand() Operand { return t.operand() }

// Backend returns the backend computing on t's device. It panics if no
// backend is registered for the device.
func (t *Tensor) Backend() Backend { return backendOf("Backend", t) }

// FromBuffer wraps storage allocated by the backend of dev (not copied) as
// a contiguous tensor of the given shape starting at element 0.
func FromBuffer(dev Device, buf Buffer, shape ...int) *Tensor {
	checkShape("FromBuffer", shape)
	if dev == "" {
		dev = CPU
	}
	return &Tensor{shape: cloneInts(shape), strides: contiguousStrides(shape), data: buf.Host, handle: buf.Dev, device: dev}
}
