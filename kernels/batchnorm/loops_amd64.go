//go:build amd64 && !noasm

package batchnorm

import "github.com/duel-ssl/duel/internal/cpu"

// useAVX2 selects the assembly loops, set once at initialisation:
// internal/cpu allows AVX2 (the CPU has it and DUEL_ISA is not generic).
var useAVX2 = cpu.AllowAVX2()

// The assembly loops (loops_amd64.s) are equivalent to the *Go functions of
// loops.go; they process 8 floats per step and the tail one by one.

//go:noescape
func bnDxAVX2(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32)

//go:noescape
func bnDxMaskedAVX2(dx, x, dy, y []float32, scale, is, mu, mdy, mdyx float32)

//go:noescape
func sqDev8AVX2(x []float32, mu float32) (s float32)

//go:noescape
func bnSumsAVX2(dy, x []float32, mu float32) (s, sx float32)

//go:noescape
func bnSumsMaskedAVX2(dy, x, y []float32, mu float32) (s, sx float32)

func bnDxTrain(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32) {
	if useAVX2 {
		bnDxAVX2(dx, x[:len(dx)], dy[:len(dx)], scale, is, mu, mdy, mdyx)
		return
	}
	bnDxGo(dx, x, dy, scale, is, mu, mdy, mdyx)
}

func bnDxTrainMasked(dx, x, dy, y []float32, scale, is, mu, mdy, mdyx float32) {
	if useAVX2 {
		bnDxMaskedAVX2(dx, x[:len(dx)], dy[:len(dx)], y[:len(dx)], scale, is, mu, mdy, mdyx)
		return
	}
	bnDxMaskedGo(dx, x, dy, y, scale, is, mu, mdy, mdyx)
}

func sqDev8(x []float32, mu float32) float32 {
	if useAVX2 {
		return sqDev8AVX2(x, mu)
	}
	return sqDev8Go(x, mu)
}

func bnSums(dy, x []float32, mu float32) (float32, float32) {
	if useAVX2 {
		return bnSumsAVX2(dy, x[:len(dy)], mu)
	}
	return bnSumsGo(dy, x, mu)
}

func bnSumsMasked(dy, x, y []float32, mu float32) (float32, float32) {
	if useAVX2 {
		return bnSumsMaskedAVX2(dy, x[:len(dy)], y[:len(dy)], mu)
	}
	return bnSumsMaskedGo(dy, x, y, mu)
}
