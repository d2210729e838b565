// Package cuda runs duel on an NVIDIA GPU: a device (a context, an
// allocator and a kernel loader), the CUDA tensor backend, registered in
// package tensor as "cuda" when a usable device exists, and DUELUpdate, the
// DUEL memory policy's update in one kernel launch.
//
// Nothing here needs the CUDA toolkit or cgo: the driver is opened at run
// time (package cuda/driver) and the kernels are PTX embedded in Go files
// generated from kernels/cuda/*.cu. On a machine without an NVIDIA driver
// or device, Available returns an error saying so, the backend is not
// registered, and the tests that need a GPU skip.
//
// The tensor.Backend interface has no error results, so the backend panics
// (with the driver's error, e.g. CUDA_ERROR_OUT_OF_MEMORY) when a driver
// call fails during an operation; use Available before choosing the device.
package cuda
