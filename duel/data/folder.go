package data

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif"  // GIF images in folders
	_ "image/jpeg" // JPEG images in folders
	_ "image/png"  // PNG images in folders
	"io/fs"
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
//
// A folder dataset (Open("folder", DIR, train)) is laid out as FolderLayouts
// says. With DIR/train/ its class list is one for the whole dataset: the
// sorted union of the class folders of train/ and of the test split (test/,
// else val/), as if torchvision's ImageFolder were given one class_to_idx
// for both splits. A class index therefore means the same class in both
// splits; a split that lacks a class folder has no image of that class.

// FolderLayouts describes the directory layouts a folder dataset may have,
// for help texts and error messages.
const FolderLayouts = "DIR/CLASS/*.png (train split only), or DIR/train/CLASS/*.png with an optional DIR/test/CLASS/*.png (or val/); " +
	"one class list for both splits, the sorted union of their class folders"

// folderExpected ends the errors about a folder dataset's layout.
const folderExpected = "expected DIR/CLASS/*.png, or DIR/train/CLASS/*.png with an optional DIR/test/CLASS/*.png (or DIR/val/CLASS/*.png)"

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
	if h < 1 || w < 1 {
		// A GIF's first frame may be smaller than its logical screen, even empty.
		return nil, 0, 0, formatErr(file, -1, "image frame is %dx%d, expected at least 1x1 pixels", w, h)
	}
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
// centre-cropped to it. The classes are root's own class folders; Open reads
// a folder dataset's splits with one class list for all of them.
func LoadFolder(root string, size int) (*Dataset, error) {
	classes, err := classDirs(root)
	if err != nil {
		return nil, err
	}
	return loadFolder(root, classes, size)
}

// classDirs returns the sorted names of dir's sub-directories (following
// symbolic links, as torchvision does), hidden ones left out.
func classDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("image folder: %w", err)
	}
	var classes []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(filepath.Join(dir, e.Name()))
			isDir = err == nil && st.IsDir()
		}
		if isDir {
			classes = append(classes, e.Name())
		}
	}
	sort.Strings(classes)
	return classes, nil
}

// folderSplits finds a folder dataset's layout: the directory of the train
// split, that of the test split ("" when there is none) and the dataset's
// classes, the sorted union of the class folders of both splits.
func folderSplits(dir string) (trainDir, testDir string, classes []string, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", "", nil, fmt.Errorf("image folder: %w, %s", err, folderExpected)
	}
	if !st.IsDir() {
		return "", "", nil, fmt.Errorf("image folder %s is a file, %s", dir, folderExpected)
	}
	top, err := classDirs(dir)
	if err != nil {
		return "", "", nil, err
	}
	has := map[string]bool{}
	for _, c := range top {
		has[c] = true
	}
	if !has["train"] {
		for _, s := range []string{"test", "val"} {
			if has[s] {
				return "", "", nil, fmt.Errorf("image folder %s has %s/ but no train/ (it would be read as a class), %s", dir, s, folderExpected)
			}
		}
		if len(top) == 0 {
			return "", "", nil, fmt.Errorf("image folder %s has no class sub-directories, %s", dir, folderExpected)
		}
		return dir, "", top, nil
	}
	trainDir = filepath.Join(dir, "train")
	for _, s := range []string{"test", "val"} {
		if has[s] {
			testDir = filepath.Join(dir, s)
			break
		}
	}
	seen := map[string]bool{}
	for _, d := range []string{trainDir, testDir} {
		if d == "" {
			continue
		}
		cs, err := classDirs(d)
		if err != nil {
			return "", "", nil, err
		}
		for _, c := range cs {
			if !seen[c] {
				seen[c] = true
				classes = append(classes, c)
			}
		}
	}
	sort.Strings(classes)
	return trainDir, testDir, classes, nil
}

// loadFolder reads the split in root with the dataset's classes: image i of
// root/classes[k] gets label k; a class without a folder in root has no
// image in this split.
func loadFolder(root string, classes []string, size int) (*Dataset, error) {
	own, err := classDirs(root)
	if err != nil {
		return nil, err
	}
	if len(own) == 0 {
		return nil, fmt.Errorf("image folder %s has no class sub-directories, %s", root, folderExpected)
	}
	present := map[string]bool{}
	for _, c := range own {
		present[c] = true
	}
	d := &Dataset{Name: "folder", Split: filepath.Base(root), C: 3, Classes: classes}
	if size > 0 {
		d.H, d.W = size, size
	}
	for label, class := range classes {
		if !present[class] {
			continue
		}
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
			return nil, fmt.Errorf("image folder: class directory %s has no PNG, JPEG or GIF image, expected at least one (leave the class folder out of a split without images of it)", dir)
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
