// Package cuda runs duel on an NVIDIA GPU: a device (a context, an
// allocator and a kernel loader) and the CUDA tensor backend, registered in
// package tensor as "cuda" when a usable device exists.
//
// Besides the core tensor.Backend, the backend implements the layer
// capabilities that have no composed fallback: tensor.ConvBackend (conv.cu:
// implicit-GEMM forward, input and weight gradients, the weight gradient
// split over the batch and summed in a fixed order, bias gradient),
// tensor.PoolBackend (pool.cu: max pooling with its indices kept on the
// device, adaptive average pooling, deterministic gathering backward
// passes) and tensor.BatchNormBackend (batchnorm.cu: ghost-group statistics
// in double, reduced in parts, fused residual and ReLU, running statistics,
// backward), and two capabilities that fuse what would otherwise be
// composed: tensor.ActivationBackend (activation.cu: ReLU, the residual
// add+ReLU and their backward pass, the CPU's bits) and
// tensor.OptimizerBackend (optim.cu: SGD, Adam/AdamW and the EMA in one
// launch per parameter, LARS in two with a deterministic reduction of its
// norms; kernels/optim's float64 arithmetic operation for operation).
// Linear, the row ops and the losses run as compositions of its core
// operations, so every method of duel/ssl trains on it; results agree with
// the CPU's to float32 summation order, not bit for bit.
//
// Its matrix products (Gemm) run in a Precision: FP32 (sgemm_f32), or TF32
// or BF16 on the tensor cores (gemm_tc.cu: the float32 factors rounded in
// the kernel, FP32 accumulation) from compute capability 8.0 on, FP32
// below. NewBackend, and so the registered backend, defaults to FP32
// (PyTorch's matmul default); DUEL_CUDA_PRECISION, UsePrecision and
// Backend.SetPrecision choose another. The convolutions follow the same
// setting: FP32 with conv.cu, TF32 or BF16 with conv_tc.cu's tensor-core
// implicit GEMMs (as PyTorch's convolutions follow
// torch.backends.cudnn.allow_tf32). DUEL_CUDA_TC_KERNEL (and
// Backend.SetTCKernel) picks among versions of the tensor-core kernels
// for timing them against each other (TCKernel).
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
// A Device queues its launches and copies to the device on one stream
// without waiting; the calls that read the device (CopyFromDevice,
// Synchronize, and so the backend's CopyOut and ArgMax) wait, and report a
// failure of the work queued before them; copies of batches (1 MiB or
// more) go through pinned staging buffers. Tensor memory comes from a
// caching Allocator (size classes, reuse, EmptyCache, an OutOfMemoryError
// naming the request and the memory held); the backend is a
// tensor.Releaser, so (*tensor.Tensor).Release returns memory to the cache
// at once, and the garbage collector only as a safety net (collected on
// demand when the device is full). Device.Record
// and Device.Elapsed time the device's work with events. See docs/cuda.md.
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
