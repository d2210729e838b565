//go:build !amd64 || noasm

package optim

// useAVX2 is false: this build has no assembly.
const useAVX2 = false

func sgdRange(w, g, buf []float32, k *sgdLoop) { sgdGo(w, g, buf, k) }

func adamRange(w, g, m, v []float32, k *adamLoop) { adamUpdate(w, g, m, v, k) }

func emaRange(target, online []float32, mf, of float32) { emaGo(target, online, mf, of) }
