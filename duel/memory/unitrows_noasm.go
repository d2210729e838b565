//go:build !amd64 || noasm

package memory

// A pure-Go build has no assembly normalisation or grid kernel: the Go
// loops run.
var (
	normKernel normFunc
	gridKernel gridFunc
)
