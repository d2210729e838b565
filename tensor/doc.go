// Package tensor provides dense float32 N-dimensional tensors: shapes and
// strides, views without copies, broadcasting elementwise operations,
// reductions and matrix products, computed by a Backend chosen per device.
//
// # Views
//
// A Tensor is a shape, strides (in elements) and an offset into storage that
// several tensors may share. Reshape (of a contiguous tensor), Permute,
// Transpose, T, Slice and Expand return views without copying; Contiguous
// and Clone copy. Operations accept any strides and return new contiguous
// tensors; only the *Into and *InPlace forms (and Fill, Zero, Set) write
// into existing storage.
//
// # Broadcasting
//
// Binary operations follow NumPy's rules: shapes are aligned on the right,
// and a dimension of size 1 (or a missing leading dimension) stretches to
// the other operand's size. Broadcast operands are read through 0 strides,
// never materialised. SumTo reduces a broadcast result back to an
// operand's shape, which is the gradient of broadcasting.
//
// # Devices and backends
//
// Every tensor lives on a Device ("cpu", "cuda:0"). Operations dispatch once
// per call, never per element, to the Backend registered under the
// device's name prefix (Register, Lookup, Backends). A Backend works on raw
// storage (a Buffer: host []float32 or an opaque device handle) plus
// offsets and strides, so host and device implementations share one
// contract. The "cpu" backend is built in: it runs matrix products through
// kernels/gemm.Sgemm, with transposed views passed as transpose flags
// rather than copied; its elementwise loops and float64 sums use AVX2
// kernels when the CPU has them (DUEL_ISA=generic or the noasm build tag
// selects the plain-Go loops, which compute the same bits), and ops above
// 64K elements are split over two goroutines. Package tensor/reference is a plain float64
// implementation used as the oracle, and package tensor/backendtest is the
// conformance suite every backend must pass.
//
// To add a device, implement Backend, call Register from the package's init
// (tensors on device "name:i" then dispatch to it), and run
// backendtest.Run(t, backend) in its tests. Data, Storage and Map need host
// storage: on a device tensor they panic with a *DeviceError wrapping
// ErrNoHostStorage; move it to the CPU with To first (At, Set and Item copy
// single elements). Package tensor/hostless, imported only by tests, is a
// device that computes with the CPU kernels behind opaque handles, so that
// code which must not touch host memory can be run on it.
//
// NaN handling: elementwise Maximum/Minimum and the Max/Min reductions
// propagate NaN; Relu maps NaN to 0; ArgMax compares with >, so a NaN is
// never chosen after the first element of a line.
//
// # Errors
//
// Shape errors are programming errors and panic with a message naming the
// operation and the shapes (as gonum's mat package does); input coming from
// users is validated before it reaches this package.
//
// # Accuracy
//
// Reductions accumulate in float64 and round once to float32, so Sum over
// a million elements is as accurate as float32 can hold. Matrix products
// accumulate in float32 (the GEMM kernel's order).
package tensor
