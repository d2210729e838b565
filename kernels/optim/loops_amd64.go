//go:build amd64 && !noasm

package optim

import "github.com/duel-ssl/duel/internal/cpu"

// useAVX2 selects the assembly loops, set once at initialisation:
// internal/cpu allows AVX2 (the CPU has it and DUEL_ISA is not generic).
var useAVX2 = cpu.AllowAVX2()

// The assembly loops (loops_amd64.s) perform the operations of the Go
// loops of loops.go on whole groups of elements (four for SGD and Adam,
// which work in float64, eight for EMA); the Go loops take the tail.

//go:noescape
func sgdAVX2(w, g, buf []float32, k *sgdLoop)

//go:noescape
func adamAVX2(w, g, m, v []float32, k *adamLoop)

//go:noescape
func emaAVX2(target, online []float32, mf, of float32)

func sgdRange(w, g, buf []float32, k *sgdLoop) {
	n := 0
	if useAVX2 {
		n = len(w) &^ 3
		var b []float32
		if buf != nil {
			b = buf[:n]
		}
		sgdAVX2(w[:n], g[:n], b, k)
	}
	var b []float32
	if buf != nil {
		b = buf[n:]
	}
	sgdGo(w[n:], g[n:], b, k)
}

func adamRange(w, g, m, v []float32, k *adamLoop) {
	n := 0
	if useAVX2 {
		n = len(w) &^ 3
		adamAVX2(w[:n], g[:n], m[:n], v[:n], k)
	}
	adamUpdate(w[n:], g[n:], m[n:], v[n:], k)
}

func emaRange(target, online []float32, mf, of float32) {
	n := 0
	if useAVX2 {
		n = len(target) &^ 7
		emaAVX2(target[:n], online[:n], mf, of)
	}
	emaGo(target[n:], online[n:], mf, of)
}
