package augment

import "fmt"

// PresetNames lists the names Preset accepts.
var PresetNames = []string{"paper", "mocov2", "simclr", "none"}

// Paper is the recipe of the DUEL paper (Appendix E.2): "color distortion
// and horizontal flip as suggested by Chen et al.; color distortion is
// applied with a probability of 0.5, horizontal flip with 0.75; color
// distortion includes color jittering and grayscale". The unstated details
// are SimCLR's CIFAR-10 choices: RandomResizedCrop(size, scale (0.08, 1)),
// jitter strength s = 0.5 (0.4, 0.4, 0.4, 0.1) applied with p = 0.5 (the
// paper's distortion probability, in place of SimCLR's 0.8) and
// RandomGrayscale(0.2) beside it (one 0.5 gate over jitter and grayscale
// together is the other reading: docs/duel-readings.md).
func Paper(size int, mean, std []float32) *Pipeline {
	return &Pipeline{
		Size:   size,
		Crop:   &Crop{Scale: [2]float64{0.08, 1}, Ratio: [2]float64{3.0 / 4, 4.0 / 3}},
		FlipP:  0.75,
		Jitter: &Jitter{Brightness: 0.4, Contrast: 0.4, Saturation: 0.4, Hue: 0.1, P: 0.5},
		GrayP:  0.2,
		Mean:   mean, Std: std,
	}
}

// MoCoV2 is MoCo v2's recipe: RandomResizedCrop(size, scale (0.2, 1)),
// RandomApply(ColorJitter(0.4, 0.4, 0.4, 0.1), p=0.8), RandomGrayscale(0.2),
// RandomApply(GaussianBlur(sigma in [0.1, 2]), p=0.5) with a kernel of about
// a tenth of the size (odd), RandomHorizontalFlip(0.5). The blur's kernel is
// SimCLR's rule: MoCo blurs with PIL's GaussianBlur(radius=sigma), which has
// no size limit, so at CIFAR sizes (3 taps at 32x32: nearly a box filter at
// sigma 2) this blur is much weaker than MoCo's; solo-learn's CIFAR
// configurations turn the blur off instead.
func MoCoV2(size int, mean, std []float32) *Pipeline {
	return &Pipeline{
		Size:   size,
		Crop:   &Crop{Scale: [2]float64{0.2, 1}, Ratio: [2]float64{3.0 / 4, 4.0 / 3}},
		FlipP:  0.5,
		Jitter: &Jitter{Brightness: 0.4, Contrast: 0.4, Saturation: 0.4, Hue: 0.1, P: 0.8},
		GrayP:  0.2,
		Blur:   &Blur{Kernel: blurKernel(size), Sigma: [2]float64{0.1, 2}, P: 0.5},
		Mean:   mean, Std: std,
	}
}

// SimCLR is SimCLR's recipe: RandomResizedCrop(size, scale (0.08, 1)),
// RandomHorizontalFlip(0.5), colour distortion of strength s
// (RandomApply(ColorJitter(0.8s, 0.8s, 0.8s, 0.2s), p=0.8) and
// RandomGrayscale(0.2)) with s = 0.5 for CIFAR-sized images (size <= 32) and
// s = 1 above, where GaussianBlur (p = 0.5, kernel about a tenth of the
// size) is added as for ImageNet.
func SimCLR(size int, mean, std []float32) *Pipeline {
	s := 0.5
	var blur *Blur
	if size > 32 {
		s = 1
		blur = &Blur{Kernel: blurKernel(size), Sigma: [2]float64{0.1, 2}, P: 0.5}
	}
	return &Pipeline{
		Size:   size,
		Crop:   &Crop{Scale: [2]float64{0.08, 1}, Ratio: [2]float64{3.0 / 4, 4.0 / 3}},
		FlipP:  0.5,
		Jitter: &Jitter{Brightness: 0.8 * s, Contrast: 0.8 * s, Saturation: 0.8 * s, Hue: 0.2 * s, P: 0.8},
		GrayP:  0.2,
		Blur:   blur,
		Mean:   mean, Std: std,
	}
}

// None only resizes to size (when it differs) and normalises: the
// evaluation transform.
func None(size int, mean, std []float32) *Pipeline {
	return &Pipeline{Size: size, Mean: mean, Std: std}
}

// Preset returns the named recipe (one of PresetNames) for size x size
// views.
func Preset(name string, size int, mean, std []float32) (*Pipeline, error) {
	switch name {
	case "paper":
		return Paper(size, mean, std), nil
	case "mocov2":
		return MoCoV2(size, mean, std), nil
	case "simclr":
		return SimCLR(size, mean, std), nil
	case "none":
		return None(size, mean, std), nil
	}
	return nil, fmt.Errorf("augment: unknown preset %q, expected one of %v", name, PresetNames)
}

// blurKernel is the odd kernel size closest to a tenth of size, at least 3.
func blurKernel(size int) int {
	k := size / 10
	if k%2 == 0 {
		k++
	}
	return max(k, 3)
}
