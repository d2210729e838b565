package data

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif"  // GIF images in folders
	_ "image/jpeg" // JPEG images in folders
	_ "image/png"  // PNG images in folders
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Image folders follow torchvision's ImageFolder: ROOT/CLASS/IMAGE, one
// sub-directory per class (classes sorted by name, label = rank), images in
// PNG, JPEG or GIF. Files with other extensions and hidden entries are
// skipped; a class folder without any image is an error.

// Limits on the images of a folder (a decoded image takes 4 bytes per pixel
// before conversion).
const (
	maxImageSide   = 1 << 14
	maxImagePixels = 1 << 26
)

// imageExts are the extensions a folder dataset reads (lower case).
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true}

// DecodeImage decodes a PNG, JPEG or GIF image into HWC RGB bytes (the alpha
// of non-premultiplied colours is dropped, gray is expanded). file names the input in errors.
func DecodeImage(b []byte, file string) (pixels []uint8, h, w int, err error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, 0, 0, formatErr(file, -1, "not a readable PNG, JPEG or GIF image: %v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxImageSide || cfg.Height > maxImageSide || cfg.Width*cfg.Height > maxImagePixels {
		return nil, 0, 0, formatErr(file, -1, "image is %dx%d, expected sides of 1..%d pixels and at most %d pixels", cfg.Width, cfg.Height, maxImageSide, maxImagePixels)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, 0, 0, formatErr(file, -1, "corrupt image: %v", err)
	}
	r := img.Bounds()
	h, w = r.Dy(), r.Dx()
	// Non-premultiplied RGB with the alpha dropped, like PIL's convert("RGB").
	nrgba, ok := img.(*image.NRGBA)
	if !ok {
		nrgba = image.NewNRGBA(image.Rect(0, 0, w, h))
		draw.Draw(nrgba, nrgba.Bounds(), img, r.Min, draw.Src)
	}
	pixels = make([]uint8, h*w*3)
	for y := 0; y < h; y++ {
		row := nrgba.Pix[y*nrgba.Stride:]
		for x := 0; x < w; x++ {
			o := (y*w + x) * 3
			pixels[o], pixels[o+1], pixels[o+2] = row[4*x], row[4*x+1], row[4*x+2]
		}
	}
	return pixels, h, w, nil
}

// LoadFolder reads an image folder. With size > 0 every image is resized so
// its shorter side is size and centre-cropped to size x size; with size 0 the
// first image fixes the shape and any other shape is resized and
// centre-cropped to it.
func LoadFolder(root string, size int) (*Dataset, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("image folder: %w", err)
	}
	var classes []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			classes = append(classes, e.Name())
		}
	}
	if len(classes) == 0 {
		return nil, fmt.Errorf("image folder %s: no class sub-directories, expected ROOT/CLASS/IMAGE.png", root)
	}
	sort.Strings(classes)
	d := &Dataset{Name: "folder", Split: filepath.Base(root), C: 3, Classes: classes}
	if size > 0 {
		d.H, d.W = size, size
	}
	for label, class := range classes {
		dir := filepath.Join(root, class)
		files, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("image folder: %w", err)
		}
		count := 0
		for _, f := range files {
			if f.IsDir() || strings.HasPrefix(f.Name(), ".") || !imageExts[strings.ToLower(filepath.Ext(f.Name()))] {
				continue
			}
			path := filepath.Join(dir, f.Name())
			b, err := readFile(path)
			if err != nil {
				return nil, err
			}
			pix, h, w, err := DecodeImage(b, path)
			if err != nil {
				return nil, err
			}
			if d.H == 0 {
				d.H, d.W = h, w
			}
			if h != d.H || w != d.W {
				pix = resizeCenterCrop(pix, h, w, 3, d.H, d.W)
			}
			d.Pixels = append(d.Pixels, pix...)
			d.Labels = append(d.Labels, int32(label))
			count++
		}
		if count == 0 {
			return nil, fmt.Errorf("image folder: class directory %s has no PNG, JPEG or GIF image", dir)
		}
	}
	return d, nil
}

// resizeCenterCrop scales an HWC image so that it covers oh x ow (keeping
// its aspect ratio) with an antialiased bilinear (triangle) filter, like
// PIL's BILINEAR, then crops the centre.
func resizeCenterCrop(src []uint8, h, w, c, oh, ow int) []uint8 {
	s := math.Max(float64(oh)/float64(h), float64(ow)/float64(w))
	rh, rw := max(oh, int(math.Round(float64(h)*s))), max(ow, int(math.Round(float64(w)*s)))
	tmp := resampleHWC(src, h, w, c, rh, rw)
	y0, x0 := (rh-oh)/2, (rw-ow)/2
	out := make([]uint8, oh*ow*c)
	for y := 0; y < oh; y++ {
		copy(out[y*ow*c:(y+1)*ow*c], tmp[((y0+y)*rw+x0)*c:])
	}
	return out
}

// resampleHWC resizes an HWC image to oh x ow, separably, with a triangle
// filter widened by the downscaling factor (antialiasing).
func resampleHWC(src []uint8, h, w, c, oh, ow int) []uint8 {
	// Horizontal pass into float rows, then vertical pass.
	wx := filterWeights(w, ow)
	wy := filterWeights(h, oh)
	mid := make([]float64, h*ow*c)
	for y := 0; y < h; y++ {
		for x := 0; x < ow; x++ {
			for _, t := range wx[x] {
				for k := 0; k < c; k++ {
					mid[(y*ow+x)*c+k] += t.w * float64(src[(y*w+t.i)*c+k])
				}
			}
		}
	}
	out := make([]uint8, oh*ow*c)
	acc := make([]float64, ow*c)
	for y := 0; y < oh; y++ {
		clear(acc)
		for _, t := range wy[y] {
			row := mid[t.i*ow*c : (t.i+1)*ow*c]
			for j, v := range row {
				acc[j] += t.w * v
			}
		}
		for j, v := range acc {
			out[y*ow*c+j] = uint8(math.Max(0, math.Min(255, math.Round(v))))
		}
	}
	return out
}

type tap struct {
	i int
	w float64
}

// filterWeights returns, for each of the out positions, the input taps of a
// triangle filter with support max(1, in/out), half-pixel centres.
func filterWeights(in, out int) [][]tap {
	scale := float64(in) / float64(out)
	support := math.Max(1, scale)
	taps := make([][]tap, out)
	for o := range taps {
		center := (float64(o) + 0.5) * scale
		lo := max(0, int(math.Floor(center-support)))
		hi := min(in, int(math.Ceil(center+support)))
		var sum float64
		for i := lo; i < hi; i++ {
			wt := 1 - math.Abs((float64(i)+0.5-center)/support)
			if wt > 0 {
				taps[o] = append(taps[o], tap{i, wt})
				sum += wt
			}
		}
		if sum == 0 {
			i := min(in-1, max(0, int(center)))
			taps[o] = []tap{{i, 1}}
			sum = 1
		}
		for k := range taps[o] {
			taps[o][k].w /= sum
		}
	}
	return taps
}
