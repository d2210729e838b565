//go:build !amd64 || noasm

package memory

// A pure-Go build has no assembly score pass: scorePass runs its Go loop.
var scoreKernel scoreFunc
