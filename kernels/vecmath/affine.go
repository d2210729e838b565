package vecmath

import "math"

// The elementwise loops of normalisation and ReLU layers and a sum. Each
// has a plain-Go reference (the *Go functions, the definition) and, on
// amd64 with AVX2, an assembly version computing bit for bit the same
// thing (affine_amd64.s; the same operations in the same order, no fused
// multiply-add: every product that is added is converted explicitly, so
// that no compiler fuses it, as GOAMD64=v3 and arm64 builds otherwise do). The exported functions pick one (affine_amd64.go,
// affine_other.go).

// affineGo writes dst[i] = (x[i]-mu)*a + b.
func affineGo(dst, x []float32, mu, a, b float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = float32((v-mu)*a) + b
	}
}

// affineReLUGo writes dst[i] = max((x[i]-mu)*a + b, 0).
func affineReLUGo(dst, x []float32, mu, a, b float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = relu32(float32((v-mu)*a) + b)
	}
}

// affineAddReLUGo writes dst[i] = max((x[i]-mu)*a + b + r[i], 0).
func affineAddReLUGo(dst, x, r []float32, mu, a, b float32) {
	x, r = x[:len(dst)], r[:len(dst)]
	for i, v := range x {
		dst[i] = relu32(float32((v-mu)*a) + b + r[i])
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

// ReLUGrad writes (or adds, with acc) dy[i] where y[i] > 0 and 0 elsewhere
// into dx[i], the gradient of a ReLU whose output is y, without branches
// (MaskPositive; when accumulating: y is a ReLU output (>= 0), so y > 0
// exactly when its bits are non-zero, and -bits >> 31 is then an all-ones
// mask).
func ReLUGrad(dx, dy, y []float32, acc bool) {
	dy, y = dy[:len(dx)], y[:len(dx)]
	if acc {
		for i, g := range dy {
			m := uint32(-int32(math.Float32bits(y[i])) >> 31)
			dx[i] += math.Float32frombits(math.Float32bits(g) & m)
		}
		return
	}
	MaskPositive(dx, dy, y)
}

// relu32 returns max(v, 0) without a branch (a mispredicted branch per
// element costs ~15x the arithmetic): the sign bit, spread over the word,
// clears negative values. NaN with the sign bit clear passes through.
func relu32(v float32) float32 {
	b := math.Float32bits(v)
	return math.Float32frombits(b &^ uint32(int32(b)>>31))
}

// Sum adds in 8 lanes (lane j takes the elements i ≡ j mod 8 of the whole
// blocks of 8), combines the lanes as (j, j+4), then (0, 2) and (1, 3),
// then (0, 1), and adds the tail in order: the order of its AVX2 version,
// so that both give the same bits.

// hsum8 combines 8 lane sums in the kernels' order.
func hsum8(acc *[8]float32) float32 {
	s0, s1, s2, s3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (s0 + s2) + (s1 + s3)
}

// sum8Go returns the sum of x.
func sum8Go(x []float32) float32 {
	var acc [8]float32
	n := len(x) &^ 7
	for i := 0; i < n; i += 8 {
		for j := range 8 {
			acc[j] += x[i+j]
		}
	}
	s := hsum8(&acc)
	for _, v := range x[n:] {
		s += v
	}
	return s
}
