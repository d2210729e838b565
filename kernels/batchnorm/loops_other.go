//go:build !amd64 || noasm

package batchnorm

// useAVX2 is false: this build has no assembly.
const useAVX2 = false

func bnDxTrain(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32) {
	bnDxGo(dx, x, dy, scale, is, mu, mdy, mdyx)
}

func bnDxTrainMasked(dx, x, dy, y []float32, scale, is, mu, mdy, mdyx float32) {
	bnDxMaskedGo(dx, x, dy, y, scale, is, mu, mdy, mdyx)
}

func sqDev8(x []float32, mu float32) float32                { return sqDev8Go(x, mu) }
func bnSums(dy, x []float32, mu float32) (float32, float32) { return bnSumsGo(dy, x, mu) }
func bnSumsMasked(dy, x, y []float32, mu float32) (float32, float32) {
	return bnSumsMaskedGo(dy, x, y, mu)
}
