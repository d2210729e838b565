//go:build (!amd64 && !arm64) || noasm

package cpu

// asimd is false off arm64, and in a noasm build.
const asimd = false
