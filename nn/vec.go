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

// The reductions below add in 8 lanes (lane j takes the elements i ≡ j mod
// 8 of the whole blocks of 8), combine the lanes as (j, j+4), then (0, 2)
// and (1, 3), then (0, 1), and add the tail in order: the order of the
// AVX2 version, so that both give the same bits.

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

// sqDev8Go returns the sum of (x[i]-mu)^2.
func sqDev8Go(x []float32, mu float32) float32 {
	var acc [8]float32
	n := len(x) &^ 7
	for i := 0; i < n; i += 8 {
		for j := range 8 {
			d := x[i+j] - mu
			acc[j] += d * d
		}
	}
	s := hsum8(&acc)
	for _, v := range x[n:] {
		d := v - mu
		s += d * d
	}
	return s
}

// bnSumsGo returns the sums of dy[i] and of dy[i]*(x[i]-mu).
func bnSumsGo(dy, x []float32, mu float32) (s, sx float32) {
	x = x[:len(dy)]
	var a, b [8]float32
	n := len(dy) &^ 7
	for i := 0; i < n; i += 8 {
		for j := range 8 {
			g := dy[i+j]
			a[j] += g
			b[j] += g * (x[i+j] - mu)
		}
	}
	s, sx = hsum8(&a), hsum8(&b)
	for i := n; i < len(dy); i++ {
		s += dy[i]
		sx += dy[i] * (x[i] - mu)
	}
	return s, sx
}

// bnSumsMaskedGo is bnSumsGo with dy[i] counted only where y[i] > 0.
func bnSumsMaskedGo(dy, x, y []float32, mu float32) (s, sx float32) {
	x, y = x[:len(dy)], y[:len(dy)]
	mask := func(g, y float32) float32 {
		if y > 0 {
			return g
		}
		return 0
	}
	var a, b [8]float32
	n := len(dy) &^ 7
	for i := 0; i < n; i += 8 {
		for j := range 8 {
			g := mask(dy[i+j], y[i+j])
			a[j] += g
			b[j] += g * (x[i+j] - mu)
		}
	}
	s, sx = hsum8(&a), hsum8(&b)
	for i := n; i < len(dy); i++ {
		g := mask(dy[i], y[i])
		s += g
		sx += g * (x[i] - mu)
	}
	return s, sx
}
