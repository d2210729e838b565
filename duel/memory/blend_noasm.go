//go:build !amd64 || noasm

package memory

// A pure-Go build has no assembly blend: blendRow runs its Go loop.
var blendKernel blendFunc

// prefetch does nothing without assembly.
func prefetch(v []int32) {}
