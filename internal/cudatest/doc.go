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
//     g++ to build. The objects and libraries are kept in a build cache
//     shared by test processes, $XDG_CACHE_HOME/duel/cuda-emu/<key>, the
//     key a digest of the compiler, its flags and every kernel source, so
//     that the packages run at once by go test ./... compile once and
//     later runs not at all; DUEL_EMU_CACHE=off builds in a temporary
//     directory instead, DUEL_EMU_CACHE=DIR keeps the cache in DIR.
//     After each release of a block-wide barrier the emulator stalls a
//     warp drawn from a pseudo-random sequence for a few rounds, so that
//     writes ordered by no barrier show; DUEL_EMU_SEED=N draws another
//     sequence (the default is 0), for hunting races over several runs.
//
// The package imports neither cuda nor its users, so that their own
// (internal) tests can use it.
package cudatest
