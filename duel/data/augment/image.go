package augment

// Image is a planar float32 image: C planes of H*W values, in [0, 1] while
// the colour ops run.
type Image struct {
	C, H, W int
	Pix     []float32 // len C*H*W, plane c at Pix[c*H*W:(c+1)*H*W]
}

// Plane returns channel c.
func (m *Image) Plane(c int) []float32 {
	n := m.H * m.W
	return m.Pix[c*n : (c+1)*n : (c+1)*n]
}

// reset shapes m as c x h x w, reusing its buffer when it is large enough.
func (m *Image) reset(c, h, w int) {
	m.C, m.H, m.W = c, h, w
	if cap(m.Pix) < c*h*w {
		m.Pix = make([]float32, c*h*w)
	}
	m.Pix = m.Pix[:c*h*w]
}

// FromHWC converts an 8-bit HWC image to a planar Image in [0, 1], like
// torchvision's ToTensor.
func FromHWC(src []uint8, h, w, c int) *Image {
	m := &Image{}
	m.reset(c, h, w)
	n := h * w
	for i := 0; i < n; i++ {
		for k := 0; k < c; k++ {
			m.Pix[k*n+i] = float32(src[i*c+k]) / 255
		}
	}
	return m
}
