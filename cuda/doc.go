// Package cuda runs duel on an NVIDIA GPU: a device (a context, an
// allocator and a kernel loader) and the CUDA tensor backend, registered in
// package tensor as "cuda" when a usable device exists.
//
// GPU is the device API that code running kernels/cuda kernels is written
// against (allocation, copies, launches; SharedMemoryOptIn for the dynamic
// shared memory opt-in): *Device implements it with the driver, and the
// tests implement it on host memory (internal/cudatest). The DUEL memory
// policy on the GPU, built on it, is package duel/memory/cudaduel; this
// package imports nothing of duel above package tensor.
//
// Nothing here needs the CUDA toolkit or cgo: the driver is opened at run
// time (package cuda/driver) and the kernels are PTX embedded in Go files
// generated from kernels/cuda/*.cu. Nothing happens at import: the first
// call to Available opens the driver and, when device 0 is usable,
// registers the backend "cuda" in package tensor. On a machine without an
// NVIDIA driver or device, Available returns an error saying so (ending in
// "use --device cpu"), nothing is registered, and the tests that need a
// GPU skip.
//
// Only device 0 backs tensors: the registry dispatches on the device's name
// prefix, so a tensor on "cuda:1" would also live on device 0. Open gives
// other devices as a GPU (e.g. for cudaduel.Memory).
//
// The tensor.Backend interface has no error results, so the backend panics
// with a *tensor.DeviceError wrapping the driver's error (e.g.
// CUDA_ERROR_OUT_OF_MEMORY) when a driver call fails during an operation;
// tensor.CatchDeviceError turns it back into an error. Use Available before
// choosing the device.
//
// The driver library is libcuda.so.1, or the file the environment variable
// DUEL_CUDA_DRIVER names (see package cuda/driver).
package cuda
