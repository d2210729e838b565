// Package driver binds the part of the CUDA driver API that duel needs,
// without cgo: libcuda.so.1 (or the file the environment variable
// DUEL_CUDA_DRIVER names, see Library) is opened at run time with purego
// (as tinygrad's ops_cuda.py does with ctypes), so building and installing
// duel needs nothing from CUDA, and a machine without an NVIDIA driver gets
// an error value, never a crash.
//
// Every driver call goes through check, which turns a CUresult into an
// *Error carrying the call, the status name and the driver's text:
//
//	cuda: cuModuleLoadData: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)
//
// CUDA contexts are current per OS thread while goroutines move between
// threads, so every Context method locks the calling goroutine to its thread
// and makes the context current for the duration of the call.
package driver
