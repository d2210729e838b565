package data

import (
	"fmt"
	"math"
)

// Dataset is a split of an image dataset held in memory.
//
// Pixels holds Len() images one after the other, each H x W x C uint8 in
// row-major HWC order (for C = 3: R, G, B of pixel (0,0), then pixel (0,1),
// ...). Labels[i] is the class of image i, in [0, len(Classes)).
type Dataset struct {
	Name    string   // dataset name, e.g. "cifar10"
	Split   string   // "train" or "test"
	H, W, C int      // image height, width and channels (1 or 3)
	Pixels  []uint8  // Len()*H*W*C bytes, HWC per image
	Labels  []int32  // one label per image
	Classes []string // class names; len(Classes) is the number of classes
}

// Len returns the number of images.
func (d *Dataset) Len() int { return len(d.Labels) }

// ImageSize returns the number of bytes of one image, H*W*C.
func (d *Dataset) ImageSize() int { return d.H * d.W * d.C }

// Image returns the pixels of image i (a sub-slice of Pixels, not a copy).
func (d *Dataset) Image(i int) []uint8 {
	n := d.ImageSize()
	return d.Pixels[i*n : (i+1)*n : (i+1)*n]
}

// NumClasses returns the number of classes.
func (d *Dataset) NumClasses() int { return len(d.Classes) }

// Validate checks that the fields are consistent: sizes, channel count and
// every label within range.
func (d *Dataset) Validate() error {
	if d.H <= 0 || d.W <= 0 || (d.C != 1 && d.C != 3) {
		return fmt.Errorf("%s %s: image shape %dx%dx%d, expected positive height and width and 1 or 3 channels", d.Name, d.Split, d.H, d.W, d.C)
	}
	if len(d.Pixels) != len(d.Labels)*d.ImageSize() {
		return fmt.Errorf("%s %s: %d pixel bytes for %d labels of %dx%dx%d images, expected %d", d.Name, d.Split,
			len(d.Pixels), len(d.Labels), d.H, d.W, d.C, len(d.Labels)*d.ImageSize())
	}
	if len(d.Classes) == 0 {
		return fmt.Errorf("%s %s: no class names", d.Name, d.Split)
	}
	for i, l := range d.Labels {
		if l < 0 || int(l) >= len(d.Classes) {
			return fmt.Errorf("%s %s: label %d of image %d, expected 0..%d", d.Name, d.Split, l, i, len(d.Classes)-1)
		}
	}
	return nil
}

// ClassIndex returns, for every class, the indices of its images in
// increasing order.
func (d *Dataset) ClassIndex() [][]int {
	idx := make([][]int, len(d.Classes))
	for i, l := range d.Labels {
		idx[l] = append(idx[l], i)
	}
	return idx
}

// ClassCounts returns the number of images of every class.
func (d *Dataset) ClassCounts() []int {
	n := make([]int, len(d.Classes))
	for _, l := range d.Labels {
		n[l]++
	}
	return n
}

// Subset returns a new dataset holding copies of the images idx, in that
// order.
func (d *Dataset) Subset(idx []int) *Dataset {
	n := d.ImageSize()
	s := &Dataset{Name: d.Name, Split: d.Split, H: d.H, W: d.W, C: d.C,
		Pixels: make([]uint8, 0, len(idx)*n), Labels: make([]int32, 0, len(idx)), Classes: d.Classes}
	for _, i := range idx {
		s.Pixels = append(s.Pixels, d.Image(i)...)
		s.Labels = append(s.Labels, d.Labels[i])
	}
	return s
}

// ToRGB returns the dataset with 3 channels: a grayscale dataset has its
// channel replicated (so a 3-channel model can use MNIST), an RGB dataset is
// returned as is.
func (d *Dataset) ToRGB() *Dataset {
	if d.C == 3 {
		return d
	}
	out := *d
	out.C = 3
	out.Pixels = make([]uint8, len(d.Pixels)*3)
	for i, v := range d.Pixels {
		out.Pixels[3*i], out.Pixels[3*i+1], out.Pixels[3*i+2] = v, v, v
	}
	return &out
}

// MeanStd returns the per-channel mean and standard deviation of the pixels
// scaled to [0, 1], the statistics Normalize uses.
func (d *Dataset) MeanStd() (mean, std []float32) {
	var sum, sq [3]float64
	for i, v := range d.Pixels {
		c := i % d.C
		f := float64(v) / 255
		sum[c] += f
		sq[c] += f * f
	}
	n := float64(len(d.Pixels) / d.C)
	mean, std = make([]float32, d.C), make([]float32, d.C)
	for c := 0; c < d.C; c++ {
		if n == 0 {
			mean[c], std[c] = 0.5, 0.5
			continue
		}
		m := sum[c] / n
		v := sq[c]/n - m*m
		if v < 1e-12 {
			v = 1e-12
		}
		mean[c], std[c] = float32(m), float32(math.Sqrt(v))
	}
	return mean, std
}
