//go:build !amd64 || noasm

package memory

// A pure-Go build has no assembly score pass.
const scoreAsm = false

func scorePassAsm(score []float64, ins, del []int32, rank []int, pb *passBest) {
	panic("memory: no assembly score pass")
}
