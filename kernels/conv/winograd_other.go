//go:build !amd64 || noasm

package conv

// bt4 is bt4Go.
func bt4(d0, d1, d2, d3, a, b, c, d []float32) { bt4Go(d0, d1, d2, d3, a, b, c, d) }

// at4 is at4Go.
func at4(s0, s1, a, b, c, d []float32) { at4Go(s0, s1, a, b, c, d) }
