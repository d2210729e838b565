// Package cudaduel runs the DUEL memory policy (duel/memory's memory.DUEL)
// on an NVIDIA GPU with the memory resident on the device, making exactly
// memory.DUEL's decisions (Protected or Compete admission; the tests
// compare them bit for bit, ties and carried scores included):
//
//   - Memory keeps a DUEL memory's rows on the similarity grid, their
//     scores and their K x K block of grid dots on the device; an update
//     copies in the batch and copies out the evicted positions.
//   - Policy is a memory.Policy on a Memory: it loads the memory on the
//     first arrival (again when the memory no longer holds the rows it
//     kept) and then copies only batches.
//   - Update runs one update from host slices (a Memory loaded, updated
//     once and closed).
//
// Everything here runs on a cuda.GPU: a *cuda.Device (cuda.Default, or
// cuda.Open for devices other than 0) on a GPU, and in the tests
// internal/cudatest's Host (the kernels transcribed to Go, host.go) and
// Emulator (the kernel sources of kernels/cuda/duel.cu on a CPU emulator).
// The algorithm on the device and its exactness argument are described in
// docs/cuda.md ("DUEL on the device") and kernels/cuda/duel.cu. Device
// memory is freed by Memory.Close and Policy.Close, not by the garbage
// collector.
//
// Unlike the rest of duel/..., which reaches the kernels only through a
// tensor backend, this package imports kernels/cuda directly: it is the
// launcher of the DUEL kernels, a kernel consumer by design, with the
// memory resident on the GPU rather than in a backend's tensors.
package cudaduel
