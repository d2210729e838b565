package augment

// The colour ops follow torchvision.transforms.functional on float tensors
// in [0, 1]: each blends with a reference image and clamps to [0, 1].

// Gray weights of torchvision's rgb_to_grayscale on tensors, which follows
// TensorFlow's 0.2989 for red (PIL's convert("L") and ITU-R 601-2 use
// 0.299; the weights sum to 0.9999, so white becomes 0.9999). Contrast and
// saturation blend with this gray too.
const (
	grayR = 0.2989
	grayG = 0.587
	grayB = 0.114
)

func clamp01(v float32) float32 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

// AdjustBrightness multiplies every value by f (blend with black).
func AdjustBrightness(m *Image, f float32) {
	for i, v := range m.Pix {
		m.Pix[i] = clamp01(v * f)
	}
}

// AdjustContrast blends every value with the mean of the grayscale image:
// f*v + (1-f)*mean.
func AdjustContrast(m *Image, f float32) {
	var mean float32
	n := m.H * m.W
	if m.C == 3 {
		r, g, b := m.Plane(0), m.Plane(1), m.Plane(2)
		var s float64
		for i := 0; i < n; i++ {
			s += float64(grayR*r[i] + grayG*g[i] + grayB*b[i])
		}
		mean = float32(s / float64(n))
	} else {
		var s float64
		for _, v := range m.Pix {
			s += float64(v)
		}
		mean = float32(s / float64(len(m.Pix)))
	}
	bias := (1 - f) * mean
	for i, v := range m.Pix {
		m.Pix[i] = clamp01(f*v + bias)
	}
}

// AdjustSaturation blends every pixel with its gray value: f*v + (1-f)*gray.
// It does nothing to a 1-channel image, like torchvision.
func AdjustSaturation(m *Image, f float32) {
	if m.C != 3 {
		return
	}
	r, g, b := m.Plane(0), m.Plane(1), m.Plane(2)
	g1 := 1 - f
	for i := range r {
		l := g1 * (grayR*r[i] + grayG*g[i] + grayB*b[i])
		r[i] = clamp01(f*r[i] + l)
		g[i] = clamp01(f*g[i] + l)
		b[i] = clamp01(f*b[i] + l)
	}
}

// Grayscale replaces every channel of an RGB image by its luma
// 0.2989 R + 0.587 G + 0.114 B (RandomGrayscale keeps 3 channels). It does
// nothing to a 1-channel image.
func Grayscale(m *Image) {
	if m.C != 3 {
		return
	}
	r, g, b := m.Plane(0), m.Plane(1), m.Plane(2)
	for i := range r {
		l := grayR*r[i] + grayG*g[i] + grayB*b[i]
		r[i], g[i], b[i] = l, l, l
	}
}

// AdjustHue shifts the hue of every pixel by f (in turns, |f| <= 0.5)
// through HSV, as torchvision's _rgb2hsv / _hsv2rgb. It does nothing to a
// 1-channel image.
func AdjustHue(m *Image, f float32) {
	if m.C != 3 {
		return
	}
	r, g, b := m.Plane(0), m.Plane(1), m.Plane(2)
	for i := range r {
		r[i], g[i], b[i] = hueShift(r[i], g[i], b[i], f)
	}
}

// hueShift rotates the hue of one pixel by f turns. It computes
// torchvision's _rgb2hsv / _hsv2rgb round trip in closed form: with
// v = max, c = max - min (= v*s) and the hue H in sixths of a turn, each
// channel is v - c*clamp(min(k, 4-k), 0, 1) where k = (n + H) mod 6 and
// n = 5, 3, 1 for R, G, B. (torchvision's clamps of p, q and t to [0, 1]
// are no-ops for inputs in [0, 1].)
func hueShift(r, g, b, f float32) (float32, float32, float32) {
	maxc, minc := r, r
	if g > maxc {
		maxc = g
	}
	if b > maxc {
		maxc = b
	}
	if g < minc {
		minc = g
	}
	if b < minc {
		minc = b
	}
	c := maxc - minc
	if c == 0 {
		return r, g, b // gray: saturation 0, any hue gives (v, v, v)
	}
	inv := 1 / c
	var h float32
	switch {
	case maxc == r:
		h = (g - b) * inv
	case maxc == g:
		h = 2 + (b-r)*inv
	default:
		h = 4 + (r-g)*inv
	}
	// h is in [-1, 5] sixths; add the shift and wrap into [0, 6).
	h += 6*f + 6
	h -= 6 * float32(int32(h*(1.0/6)))
	if h >= 6 {
		h -= 6
	}
	return maxc - c*hueRamp(h+5), maxc - c*hueRamp(h+3), maxc - c*hueRamp(h+1)
}

// hueRamp is clamp(min(k, 4-k), 0, 1) for k = x mod 6, x in [0, 12).
func hueRamp(k float32) float32 {
	if k >= 6 {
		k -= 6
	}
	if k > 2 {
		k = 4 - k
	}
	if k < 0 {
		return 0
	}
	if k > 1 {
		return 1
	}
	return k
}
