package batchnorm

// The elementwise loops of BatchNorm. Each has a plain-Go reference (the
// *Go functions, the definition) and, on amd64 with AVX2, an assembly
// version computing bit for bit the same thing (loops_amd64.s; the same
// operations in the same order, no fused multiply-add: every product that
// is added is converted explicitly, so that no compiler fuses it, as
// GOAMD64=v3 and arm64 builds otherwise do). The functions
// without suffix pick one (loops_amd64.go, loops_other.go).

// bnDxGo writes the BatchNorm input gradient of one plane with batch
// statistics: dx[i] = scale * ((dy[i] - mdy) - float32(((x[i]-mu)*is)*mdyx)).
// dx may alias dy.
func bnDxGo(dx, x, dy []float32, scale, is, mu, mdy, mdyx float32) {
	x, dy = x[:len(dx)], dy[:len(dx)]
	for i := range dx {
		dx[i] = scale * ((dy[i] - mdy) - ((x[i]-mu)*is)*mdyx)
	}
}

// bnDxMaskedGo is bnDxGo of the gradient masked by a ReLU's output y: dy[i]
// where y[i] > 0, +0 elsewhere (vecmath.MaskPositive's bits), in one pass
// instead of a masking pass and bnDxGo. dx may alias dy.
func bnDxMaskedGo(dx, x, dy, y []float32, scale, is, mu, mdy, mdyx float32) {
	x, dy, y = x[:len(dx)], dy[:len(dx)], y[:len(dx)]
	for i := range dx {
		var g float32
		if y[i] > 0 {
			g = dy[i]
		}
		dx[i] = scale * ((g - mdy) - ((x[i]-mu)*is)*mdyx)
	}
}

// The reductions below add in 8 lanes (lane j takes the elements i ≡ j mod
// 8 of the whole blocks of 8), combine the lanes as (j, j+4), then (0, 2)
// and (1, 3), then (0, 1), and add the tail in order: the order of the
// AVX2 version (and of vecmath.Sum), so that both give the same bits.

// hsum8 combines 8 lane sums in the kernels' order.
func hsum8(acc *[8]float32) float32 {
	s0, s1, s2, s3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (s0 + s2) + (s1 + s3)
}

// sqDev8Go returns the sum of (x[i]-mu)^2.
func sqDev8Go(x []float32, mu float32) float32 {
	var acc [8]float32
	n := len(x) &^ 7
	for i := 0; i < n; i += 8 {
		for j := range 8 {
			d := x[i+j] - mu
			acc[j] += float32(d * d)
		}
	}
	s := hsum8(&acc)
	for _, v := range x[n:] {
		d := v - mu
		s += float32(d * d)
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
			b[j] += float32(g * (x[i+j] - mu))
		}
	}
	s, sx = hsum8(&a), hsum8(&b)
	for i := n; i < len(dy); i++ {
		s += dy[i]
		sx += float32(dy[i] * (x[i] - mu))
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
			b[j] += float32(g * (x[i+j] - mu))
		}
	}
	s, sx = hsum8(&a), hsum8(&b)
	for i := n; i < len(dy); i++ {
		g := mask(dy[i], y[i])
		s += g
		sx += float32(g * (x[i] - mu))
	}
	return s, sx
}
