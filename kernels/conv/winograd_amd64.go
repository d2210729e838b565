//go:build amd64 && !noasm

package conv

import "github.com/duel-ssl/duel/internal/cpu"

// useAVX2 selects the assembly loops: internal/cpu allows AVX2.
var useAVX2 = cpu.AllowAVX2()

// The assembly loops (winograd_amd64.s) are equivalent to bt4Go and at4Go;
// they run when useAVX2.

//go:noescape
func bt4AVX2(d0, d1, d2, d3, a, b, c, d []float32)

//go:noescape
func at4AVX2(s0, s1, a, b, c, d []float32)

// bt4 is bt4Go, with AVX2 when available.
func bt4(d0, d1, d2, d3, a, b, c, d []float32) {
	if useAVX2 {
		n := len(d0)
		bt4AVX2(d0, d1[:n], d2[:n], d3[:n], a[:n], b[:n], c[:n], d[:n])
		return
	}
	bt4Go(d0, d1, d2, d3, a, b, c, d)
}

// at4 is at4Go, with AVX2 when available.
func at4(s0, s1, a, b, c, d []float32) {
	if useAVX2 {
		n := len(s0)
		at4AVX2(s0, s1[:n], a[:n], b[:n], c[:n], d[:n])
		return
	}
	at4Go(s0, s1, a, b, c, d)
}
