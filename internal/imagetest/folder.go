// Package imagetest writes image folders for tests: the layouts of duel's
// folder dataset (duel/data's LoadFolder), with images that tell their
// class apart.
package imagetest

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// WriteFolder writes per PNG images of side x side pixels for each class
// into root/SPLIT/CLASS/ for each split (root/CLASS/ when splits is
// empty) and returns root. Class c's images are one colour, with noise
// that differs between images and splits.
func WriteFolder(t testing.TB, root string, splits, classes []string, per, side int) string {
	t.Helper()
	dirs := []string{root}
	if len(splits) > 0 {
		dirs = dirs[:0]
		for _, s := range splits {
			dirs = append(dirs, filepath.Join(root, s))
		}
	}
	for si, split := range dirs {
		for ci, class := range classes {
			dir := filepath.Join(split, class)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range per {
				img := image.NewRGBA(image.Rect(0, 0, side, side))
				for p := range side * side {
					v := uint8(80*ci + (37*i+11*p+7*si)%40)
					img.Set(p%side, p/side, color.RGBA{R: v, G: 255 - v, B: uint8(60 * ci), A: 255})
				}
				f, err := os.Create(filepath.Join(dir, strconv.Itoa(i)+".png"))
				if err != nil {
					t.Fatal(err)
				}
				err = png.Encode(f, img)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return root
}
