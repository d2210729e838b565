package augment

import (
	"fmt"

	"github.com/duel-ssl/duel/internal/splitmix"
)

// Crop configures RandomResizedCrop: the area fraction range Scale and the
// aspect ratio range Ratio (torchvision's defaults are (0.08, 1) and
// (3/4, 4/3)).
type Crop struct {
	Scale [2]float64
	Ratio [2]float64
}

// Jitter configures ColorJitter wrapped in RandomApply with probability P.
// Factors are drawn as torchvision does: brightness, contrast and
// saturation uniformly in [max(0, 1-x), 1+x], hue in [-Hue, Hue]; a zero
// strength disables that op; the four ops run in a random order.
type Jitter struct {
	Brightness, Contrast, Saturation, Hue float64
	P                                     float64
}

// Blur configures GaussianBlur (odd Kernel size, sigma ~ U(Sigma)) wrapped
// in RandomApply with probability P.
type Blur struct {
	Kernel int
	Sigma  [2]float64
	P      float64
}

// Pipeline is one view's augmentation recipe, applied in this order:
// RandomResizedCrop (or a plain resize to Size when Crop is nil and Size
// differs from the input), RandomHorizontalFlip(FlipP), RandomApply(Jitter),
// RandomGrayscale(GrayP), RandomApply(Blur), Normalize(Mean, Std).
//
// The random numbers are drawn in that order from the RNG given to Apply:
// the crop (1 to 10 attempts of 2 numbers, then 2 for the position), one for
// the flip, one for applying the jitter then, if applied, 3 for the order and
// one per enabled factor, one for grayscale, one for applying the blur and,
// if applied, one for sigma.
type Pipeline struct {
	Size   int // output height and width; 0 keeps the input size
	Crop   *Crop
	FlipP  float64
	Jitter *Jitter
	GrayP  float64
	Blur   *Blur
	Mean   []float32 // per channel; nil means 0
	Std    []float32 // per channel; nil means 1
}

// Validate checks the recipe's parameters against c input channels.
func (p *Pipeline) Validate(c int) error {
	prob := func(name string, v float64) error {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("augment: %s probability %v, expected [0, 1]", name, v)
		}
		return nil
	}
	if p.Size < 0 {
		return fmt.Errorf("augment: size %d, expected >= 0", p.Size)
	}
	if p.Crop != nil {
		s, r := p.Crop.Scale, p.Crop.Ratio
		if !(s[0] > 0 && s[0] <= s[1] && s[1] <= 1) {
			return fmt.Errorf("augment: crop scale %v, expected 0 < min <= max <= 1", s)
		}
		if !(r[0] > 0 && r[0] <= r[1]) {
			return fmt.Errorf("augment: crop ratio %v, expected 0 < min <= max", r)
		}
	}
	if err := prob("flip", p.FlipP); err != nil {
		return err
	}
	if err := prob("grayscale", p.GrayP); err != nil {
		return err
	}
	if j := p.Jitter; j != nil {
		if err := prob("jitter", j.P); err != nil {
			return err
		}
		if j.Brightness < 0 || j.Contrast < 0 || j.Saturation < 0 || !(j.Hue >= 0 && j.Hue <= 0.5) {
			return fmt.Errorf("augment: jitter %+v, expected non-negative strengths and hue in [0, 0.5]", *j)
		}
	}
	if b := p.Blur; b != nil {
		if err := prob("blur", b.P); err != nil {
			return err
		}
		if b.Kernel < 1 || b.Kernel%2 == 0 || !(b.Sigma[0] > 0 && b.Sigma[0] <= b.Sigma[1]) {
			return fmt.Errorf("augment: blur kernel %d sigma %v, expected an odd kernel size and 0 < min <= max", b.Kernel, b.Sigma)
		}
	}
	for _, v := range [][]float32{p.Mean, p.Std} {
		if v != nil && len(v) != c {
			return fmt.Errorf("augment: %d normalisation values for %d channels", len(v), c)
		}
	}
	for _, s := range p.Std {
		if !(s > 0) {
			return fmt.Errorf("augment: normalisation std %v, expected > 0", p.Std)
		}
	}
	return nil
}

// OutSize returns the height and width of the views of an h x w image.
func (p *Pipeline) OutSize(h, w int) (int, int) {
	if p.Size > 0 {
		return p.Size, p.Size
	}
	return h, w
}

// Workspace is per-goroutine scratch memory for Apply; the zero value is
// ready to use. Reusing it makes Apply allocation-free.
type Workspace struct {
	img    Image
	rows   []float32
	tmp    []float32
	kernel []float32
	tx, ty axisTable
}

// Apply writes one augmented, normalised view of the h x w x c uint8 HWC
// image src into dst (c x oh x ow, see OutSize), drawing its random numbers
// from r.
func (p *Pipeline) Apply(dst []float32, src []uint8, h, w, c int, r *splitmix.RNG, ws *Workspace) {
	oh, ow := p.OutSize(h, w)
	top, left, ch, cw := 0, 0, h, w
	if p.Crop != nil {
		top, left, ch, cw = CropParams(r, h, w, p.Crop.Scale, p.Crop.Ratio)
	}
	flip := r.Float64() < p.FlipP
	m := &ws.img
	m.reset(c, oh, ow)
	ws.rows = resizedCropU8(m, src, w, c, top, left, ch, cw, flip, &ws.tx, &ws.ty, ws.rows)
	if j := p.Jitter; j != nil && r.Float64() < j.P {
		applyJitter(m, j, r)
	}
	if r.Float64() < p.GrayP {
		Grayscale(m)
	}
	if b := p.Blur; b != nil && r.Float64() < b.P {
		sigma := r.Uniform(b.Sigma[0], b.Sigma[1])
		k := min(b.Kernel, 2*min(oh, ow)-1)
		if k%2 == 0 {
			k--
		}
		ws.kernel = GaussianKernel(k, sigma, ws.kernel)
		if cap(ws.tmp) < oh*ow {
			ws.tmp = make([]float32, oh*ow)
		}
		GaussianBlur(m, ws.kernel, ws.tmp)
	}
	Normalize(dst, m, p.Mean, p.Std)
}

// applyJitter draws ColorJitter's order and factors and applies them.
func applyJitter(m *Image, j *Jitter, r *splitmix.RNG) {
	order := r.Perm4()
	var bf, cf, sf, hf float32
	if j.Brightness > 0 {
		bf = float32(r.Uniform(max(0, 1-j.Brightness), 1+j.Brightness))
	}
	if j.Contrast > 0 {
		cf = float32(r.Uniform(max(0, 1-j.Contrast), 1+j.Contrast))
	}
	if j.Saturation > 0 {
		sf = float32(r.Uniform(max(0, 1-j.Saturation), 1+j.Saturation))
	}
	if j.Hue > 0 {
		hf = float32(r.Uniform(-j.Hue, j.Hue))
	}
	for _, op := range order {
		switch op {
		case 0:
			if j.Brightness > 0 {
				AdjustBrightness(m, bf)
			}
		case 1:
			if j.Contrast > 0 {
				AdjustContrast(m, cf)
			}
		case 2:
			if j.Saturation > 0 {
				AdjustSaturation(m, sf)
			}
		case 3:
			if j.Hue > 0 {
				AdjustHue(m, hf)
			}
		}
	}
}

// Normalize writes (v - mean[c]) / std[c] for every value of m into dst
// (CHW). A nil mean is 0 and a nil std is 1.
func Normalize(dst []float32, m *Image, mean, std []float32) {
	n := m.H * m.W
	for c := 0; c < m.C; c++ {
		var mu float32
		inv := float32(1)
		if mean != nil {
			mu = mean[c]
		}
		if std != nil {
			inv = 1 / std[c]
		}
		bias := -mu * inv
		src := m.Plane(c)
		out := dst[c*n : (c+1)*n]
		for i, v := range src {
			out[i] = v*inv + bias
		}
	}
}
