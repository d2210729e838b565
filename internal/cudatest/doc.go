// Package cudatest implements cuda.GPU without a GPU, for the tests of the
// packages that run kernels/cuda kernels (cuda, duel/memory/cudaduel):
//
//   - Host keeps device memory in host memory and runs Go versions of the
//     kernels (their contracts as the .cu comments state them). It checks
//     the Go side of a caller (buffer sizes, offsets, parameter order,
//     copies) on every machine. Packages add Go versions of their own
//     kernels with Host.Register.
//   - Emulator runs the real kernel sources on the CPU: kernels/cuda/emu,
//     compiled with g++ at test time into a shared library called through
//     purego with cuLaunchKernel's parameter layout. NewEmulator skips the
//     test under -short or when g++ is not on the PATH; nothing here needs
//     g++ to build.
//
// The package imports neither cuda nor its users, so that their own
// (internal) tests can use it.
package cudatest
