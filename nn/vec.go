package nn

import "math"

// Elementwise loops of BatchNorm and ReLU. Each has a plain-Go reference
// (the *Go functions, the definition) and, on amd64 with AVX2, an assembly
// version computing bit for bit the same thing (vec_amd64.s; the same
// operations in the same order, no fused multiply-add). The dispatching
// functions without suffix pick one (vec_amd64.go, vec_other.go).

// affineGo writes dst[i] = (x[i]-mu)*a + b.
func affineGo(dst, x []float32, mu, a, b float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = (v-mu)*a + b
	}
}

// affineReLUGo writes dst[i] = max((x[i]-mu)*a + b, 0).
func affineReLUGo(dst, x []float32, mu, a, b float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = relu32((v-mu)*a + b)
	}
}

// affineAddReLUGo writes dst[i] = max((x[i]-mu)*a + b + r[i], 0).
func affineAddReLUGo(dst, x, r []float32, mu, a, b float32) {
	x, r = x[:len(dst)], r[:len(dst)]
	for i, v := range x {
		dst[i] = relu32((v-mu)*a + b + r[i])
	}
}

// maskPositiveGo writes dx[i] = dy[i] where y[i] > 0, else 0.
func maskPositiveGo(dx, dy, y []float32) {
	dy, y = dy[:len(dx)], y[:len(dx)]
	for i, g := range dy {
		m := uint32(0)
		if y[i] > 0 {
			m = ^m
		}
		dx[i] = math.Float32frombits(math.Float32bits(g) & m)
	}
}

// bnDxGo writes the BatchNorm input gradient of one plane with batch
// statistics: dx[i] = scale * ((dy[i] - mdy) - ((x[i]-mu)*is)*mdyx).
// dx may alias dy.
func bnDxGo(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32) {
	x, dy = x[:len(dx)], dy[:len(dx)]
	for i := range dx {
		dx[i] = scale * ((dy[i] - mdy) - ((x[i]-mu)*is)*mdyx)
	}
}

// relu32 returns max(v, 0) without a branch (a mispredicted branch per
// element costs ~15x the arithmetic): the sign bit, spread over the word,
// clears negative values. NaN with the sign bit clear passes through.
func relu32(v float32) float32 {
	b := math.Float32bits(v)
	return math.Float32frombits(b &^ uint32(int32(b)>>31))
}
