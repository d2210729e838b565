//go:build !amd64 || noasm

package memory

// A pure-Go build has no assembly transposition: transposeBand runs its Go
// loop.
var transposeKernel, transposeCachedKernel transposeFunc
