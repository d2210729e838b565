package augment

import "math"

// GaussianKernel returns torchvision's 1-D Gaussian kernel of odd size k and
// standard deviation sigma: exp(-x²/2σ²) at x = -(k-1)/2 .. (k-1)/2,
// normalised to sum 1.
func GaussianKernel(k int, sigma float64, dst []float32) []float32 {
	dst = dst[:0]
	half := float64(k-1) / 2
	var sum float64
	w := make([]float64, k)
	for i := range w {
		x := -half + float64(i)
		w[i] = math.Exp(-0.5 * (x / sigma) * (x / sigma))
		sum += w[i]
	}
	for _, v := range w {
		dst = append(dst, float32(v/sum))
	}
	return dst
}

// reflect maps an index outside [0, n) back inside by reflection without
// repeating the edge (torch's "reflect" padding): -1 -> 1, n -> n-2.
func reflect(i, n int) int {
	if n == 1 {
		return 0
	}
	for i < 0 || i >= n {
		if i < 0 {
			i = -i
		}
		if i >= n {
			i = 2*(n-1) - i
		}
	}
	return i
}

// GaussianBlur convolves every channel with the separable kernel (odd
// length, at most 2*min(H,W)-1 taps) with reflect padding, as torchvision's
// gaussian_blur. tmp is scratch space of at least H*W values.
func GaussianBlur(m *Image, kernel []float32, tmp []float32) {
	k := len(kernel)
	half := k / 2
	h, w := m.H, m.W
	tmp = tmp[:h*w]
	for c := 0; c < m.C; c++ {
		p := m.Plane(c)
		for y := 0; y < h; y++ {
			row := p[y*w : (y+1)*w]
			out := tmp[y*w : (y+1)*w]
			for x := 0; x < w; x++ {
				var s float32
				if x >= half && x+half < w {
					win := row[x-half : x-half+k]
					for t, kv := range kernel {
						s += kv * win[t]
					}
				} else {
					for t, kv := range kernel {
						s += kv * row[reflect(x+t-half, w)]
					}
				}
				out[x] = s
			}
		}
		for y := 0; y < h; y++ {
			out := p[y*w : (y+1)*w]
			clear(out)
			for t, kv := range kernel {
				src := tmp[reflect(y+t-half, h)*w:]
				for x := range out {
					out[x] += kv * src[x]
				}
			}
		}
	}
}
