package data

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCIFAR10RoundTrip(t *testing.T) {
	pix := synthImages(3, 32, 32, 3)
	labels := []int32{0, 9, 4}
	b := EncodeCIFAR10(pix, labels)
	if len(b) != 3*3073 {
		t.Fatalf("encoded %d bytes, want %d", len(b), 3*3073)
	}
	// Hand check: record 1, pixel (y=2, x=5), green is at 1 + 1024 + 2*32+5.
	if got, want := b[3073+1+1024+2*32+5], pix[3072+(2*32+5)*3+1]; got != want {
		t.Fatalf("encoded green byte %d, want %d", got, want)
	}
	gotPix, gotLab, err := ParseCIFAR10(b, "x.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotPix, pix) || len(gotLab) != 3 || gotLab[1] != 9 {
		t.Fatalf("round trip differs: labels %v", gotLab)
	}
}

func TestCIFAR100(t *testing.T) {
	rec := make([]byte, 3074)
	rec[0], rec[1] = 19, 99
	rec[2] = 200 // red of pixel 0
	pix, lab, err := ParseCIFAR100(rec, "train.bin", true)
	if err != nil || lab[0] != 99 || pix[0] != 200 {
		t.Fatalf("fine: %v %v %v", lab, pix[:3], err)
	}
	_, lab, err = ParseCIFAR100(rec, "train.bin", false)
	if err != nil || lab[0] != 19 {
		t.Fatalf("coarse: %v %v", lab, err)
	}
}

func TestParseErrors(t *testing.T) {
	good := EncodeCIFAR10(synthImages(2, 32, 32, 3), []int32{1, 2})
	badLabel := append([]byte(nil), good...)
	badLabel[3073] = 10
	stl := stlBytes(synthImages(1, 96, 96, 3), 1)
	pngStrip, _ := EncodeTFJSStrip(synthImages(2, 32, 32, 3), 2)
	narrow := encodePNG(image.NewRGBA(image.Rect(0, 0, 32, 32)))
	cases := []struct {
		name  string
		parse func() error
		want  []string
	}{
		{"cifar empty", func() error { _, _, err := ParseCIFAR10(nil, "a.bin"); return err }, []string{"a.bin", "empty"}},
		{"cifar truncated", func() error { _, _, err := ParseCIFAR10(good[:5000], "a.bin"); return err }, []string{"a.bin", "offset 3073", "truncated"}},
		{"cifar label", func() error { _, _, err := ParseCIFAR10(badLabel, "a.bin"); return err }, []string{"a.bin", "offset 3073", "label 10"}},
		{"cifar100 label", func() error {
			_, _, err := ParseCIFAR100(append([]byte{20}, make([]byte, 3073)...), "c.bin", false)
			return err
		}, []string{"c.bin", "label 20"}},
		{"stl truncated", func() error { _, _, err := ParseSTL10Images(stl[:100], "train_X.bin"); return err }, []string{"train_X.bin", "truncated"}},
		{"stl label", func() error { _, err := ParseSTL10Labels([]byte{1, 11}, "train_y.bin"); return err }, []string{"train_y.bin", "offset 1", "1..10"}},
		{"stl label zero", func() error { _, err := ParseSTL10Labels([]byte{0}, "y.bin"); return err }, []string{"offset 0"}},
		{"idx magic", func() error { _, err := ParseIDX([]byte{1, 2, 3, 4, 5}, "t.idx"); return err }, []string{"t.idx", "magic number"}},
		{"idx type", func() error { _, err := ParseIDX([]byte{0, 0, 9, 1, 0, 0, 0, 0}, "t.idx"); return err }, []string{"element type"}},
		{"idx short", func() error { _, err := ParseIDX([]byte{0, 0}, "t.idx"); return err }, []string{"too short"}},
		{"idx header", func() error { _, err := ParseIDX([]byte{0, 0, 8, 3, 0, 0}, "t.idx"); return err }, []string{"inside the header"}},
		{"idx truncated", func() error { _, err := ParseIDX(idxBytes([]int{2, 2, 2}, make([]byte, 7)), "t.idx"); return err }, []string{"truncated", "expected 8"}},
		{"idx trailing", func() error { _, err := ParseIDX(idxBytes([]int{2}, make([]byte, 3)), "t.idx"); return err }, []string{"trailing"}},
		{"idx huge", func() error { _, err := ParseIDX(idxBytes([]int{1 << 20, 1 << 20}, nil), "t.idx"); return err }, []string{"exceed"}},
		{"idx bad gzip", func() error { _, err := ParseIDX([]byte{0x1f, 0x8b, 1}, "t.idx.gz"); return err }, []string{"t.idx.gz", "gzip"}},
		{"idx truncated gzip", func() error {
			z := gzipBytes(idxBytes([]int{4}, []byte{1, 2, 3, 4}))
			_, err := ParseIDX(z[:len(z)-6], "t.gz")
			return err
		}, []string{"t.gz", "corrupt gzip"}},
		{"png garbage", func() error { _, _, err := ParseTFJSStrip([]byte("hello"), "s.png"); return err }, []string{"s.png", "PNG"}},
		{"png truncated", func() error { _, _, err := ParseTFJSStrip(pngStrip[:len(pngStrip)/2], "s.png"); return err }, []string{"s.png", "corrupt PNG"}},
		{"png width", func() error { _, _, err := ParseTFJSStrip(narrow, "s.png"); return err }, []string{"s.png", "1024 pixels wide"}},
		{"labels json", func() error { _, err := ParseLabelsJSON([]byte("[1,2,"), "l.json", 10); return err }, []string{"l.json", "JSON"}},
		{"labels range", func() error { _, err := ParseLabelsJSON([]byte("[1,12]"), "l.json", 10); return err }, []string{"l.json", "label 1 is 12"}},
		{"labels float", func() error { _, err := ParseLabelsJSON([]byte("[1.5]"), "l.json", 10); return err }, []string{"1.5"}},
		{"labels empty", func() error { _, err := ParseLabelsJSON([]byte("[]"), "l.json", 10); return err }, []string{"empty"}},
		{"image garbage", func() error { _, _, _, err := DecodeImage([]byte("GIF89a..."), "x.gif"); return err }, []string{"x.gif"}},
		{"labels json then more", func() error { _, err := ParseLabelsJSON([]byte("[1,2] [3]"), "l.json", 10); return err }, []string{"l.json", "data after"}},
		{"labels json then bracket", func() error { _, err := ParseLabelsJSON([]byte("[1,2]]"), "l.json", 10); return err }, []string{"l.json", "data after"}},
		// A GIF whose 4x4 screen's first frame is 4 x 0 pixels.
		{"empty gif frame", func() error { _, _, _, err := DecodeImage(emptyFrameGIF, "e.gif"); return err }, []string{"e.gif", "4x0", "at least 1x1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.parse()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func encodePNG(img image.Image) []byte {
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

func TestDecodeImageAlphaAndGray(t *testing.T) {
	n := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	n.SetNRGBA(1, 0, color.NRGBA{200, 100, 50, 128}) // half transparent: colour kept
	g := image.NewGray(image.Rect(0, 0, 1, 1))
	g.SetGray(0, 0, color.Gray{77})
	pix, h, w, err := DecodeImage(encodePNG(n), "a.png")
	if err != nil || h != 1 || w != 2 || [3]uint8(pix[3:6]) != [3]uint8{200, 100, 50} {
		t.Fatalf("NRGBA: %v %v", pix, err)
	}
	pix, _, _, err = DecodeImage(encodePNG(g), "g.png")
	if err != nil || [3]uint8(pix) != [3]uint8{77, 77, 77} {
		t.Fatalf("gray: %v %v", pix, err)
	}
}

func TestTFJSStrip(t *testing.T) {
	pix := synthImages(3, 32, 32, 3)
	b, err := EncodeTFJSStrip(pix, 3)
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := ParseTFJSStrip(b, "s.png")
	if err != nil || n != 3 || !bytes.Equal(got, pix) {
		t.Fatalf("round trip: n=%d err=%v", n, err)
	}
	// An RGB PNG like the real files (Go decodes it to *image.RGBA), and a
	// gray one through the generic path: column p = y*32+x is pixel (y, x).
	rgb := image.NewRGBA(image.Rect(0, 0, 1024, 2))
	gray := image.NewGray(image.Rect(0, 0, 1024, 2))
	rgb.Set(3*32+7, 1, color.RGBA{10, 20, 30, 255})
	gray.SetGray(3*32+7, 1, color.Gray{77})
	for _, c := range []struct {
		img  image.Image
		want [3]uint8
	}{{rgb, [3]uint8{10, 20, 30}}, {gray, [3]uint8{77, 77, 77}}} {
		got, n, err := ParseTFJSStrip(encodePNG(c.img), "s.png")
		if err != nil || n != 2 {
			t.Fatal(n, err)
		}
		o := 3072 + (3*32+7)*3
		if [3]uint8(got[o:o+3]) != c.want {
			t.Fatalf("pixel (3,7) of image 1 = %v, want %v", got[o:o+3], c.want)
		}
	}
}

func TestSTL10Layout(t *testing.T) {
	pix := synthImages(2, 96, 96, 3)
	b := stlBytes(pix, 2)
	// Hand check: pixel (y=1, x=0) of channel 0 is the second byte.
	if b[1] != pix[(1*96+0)*3] {
		t.Fatal("test encoder is not column-major")
	}
	got, n, err := ParseSTL10Images(b, "x.bin")
	if err != nil || n != 2 || !bytes.Equal(got, pix) {
		t.Fatalf("STL-10 parse: n=%d err=%v", n, err)
	}
	lab, err := ParseSTL10Labels([]byte{1, 10}, "y.bin")
	if err != nil || lab[0] != 0 || lab[1] != 9 {
		t.Fatal(lab, err)
	}
}

func TestIDXPlainAndGzip(t *testing.T) {
	raw := idxBytes([]int{2, 3, 4}, synthImages(1, 2, 12, 1))
	for _, b := range [][]byte{raw, gzipBytes(raw)} {
		x, err := ParseIDX(b, "x")
		if err != nil {
			t.Fatal(err)
		}
		if len(x.Dims) != 3 || x.Dims[2] != 4 || len(x.Data) != 24 {
			t.Fatalf("dims %v, %d bytes", x.Dims, len(x.Data))
		}
	}
}

func TestFolder(t *testing.T) {
	dir := t.TempDir()
	mk := func(path string, w, h int, c color.RGBA) {
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for i := 0; i < w*h; i++ {
			img.Set(i%w, i/w, c)
		}
		writeFile(t, dir, path, encodePNG(img))
	}
	mk("train/dog/a.png", 8, 8, color.RGBA{200, 0, 0, 255})
	mk("train/cat/b.png", 8, 8, color.RGBA{0, 100, 0, 255})
	mk("train/cat/c.PNG", 16, 12, color.RGBA{0, 0, 50, 255}) // resized to 8x8
	writeFile(t, dir, "train/cat/notes.txt", []byte("skipped"))
	mk("test/cat/d.png", 8, 8, color.RGBA{1, 2, 3, 255})
	mk("test/dog/e.png", 8, 8, color.RGBA{1, 2, 3, 255})
	d, err := Open("folder", dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 3 || d.H != 8 || d.W != 8 || d.C != 3 || strings.Join(d.Classes, ",") != "cat,dog" {
		t.Fatalf("folder: %d images %dx%dx%d classes %v", d.Len(), d.H, d.W, d.C, d.Classes)
	}
	if d.Labels[0] != 0 || d.Labels[2] != 1 || d.Image(2)[0] != 200 || d.Image(1)[2] != 50 {
		t.Fatalf("labels %v, pixels %v %v", d.Labels, d.Image(2)[:3], d.Image(1)[:3])
	}
	if _, err := Open("folder", dir, false); err != nil {
		t.Fatal(err)
	}
	// Bad input: an empty class folder, an unreadable image.
	os.MkdirAll(filepath.Join(dir, "train", "empty"), 0o755)
	if _, err := Open("folder", dir, true); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty class folder: %v", err)
	}
	os.Remove(filepath.Join(dir, "train", "empty"))
	writeFile(t, dir, "train/dog/bad.jpg", []byte("not a jpeg"))
	if _, err := Open("folder", dir, true); err == nil || !strings.Contains(err.Error(), "bad.jpg") {
		t.Fatalf("unreadable image: %v", err)
	}
	if _, err := Open("folder", filepath.Join(dir, "nope"), true); err == nil {
		t.Fatal("missing folder: no error")
	}
}

func TestOpenFormats(t *testing.T) {
	root := t.TempDir()
	// CIFAR-10 binary in the archive's sub-directory.
	pix := synthImages(4, 32, 32, 3)
	for i := 1; i <= 5; i++ {
		writeFile(t, root, filepath.Join("cifar10", "cifar-10-batches-bin", "data_batch_"+string(rune('0'+i))+".bin"), EncodeCIFAR10(pix, []int32{0, 1, 2, 3}))
	}
	writeFile(t, root, "cifar10/cifar-10-batches-bin/test_batch.bin", EncodeCIFAR10(pix[:3072], []int32{7}))
	d, err := Open("cifar10", root, true)
	if err != nil || d.Len() != 20 || d.Split != "train" || d.NumClasses() != 10 {
		t.Fatalf("cifar10 bin: %v %v", d, err)
	}
	if d, err = Open("cifar10", root, false); err != nil || d.Len() != 1 || d.Labels[0] != 7 {
		t.Fatalf("cifar10 bin test: %v", err)
	}
	// The tfjs form.
	tf := filepath.Join(root, "tfjs")
	strip, _ := EncodeTFJSStrip(pix, 4)
	for i := 1; i <= 5; i++ {
		writeFile(t, tf, "data_batch_"+string(rune('0'+i))+".png", strip)
	}
	writeFile(t, tf, "test_batch.png", strip)
	labels := "[" + strings.TrimSuffix(strings.Repeat("3,", 20), ",") + "]"
	writeFile(t, tf, "train_lables.json", []byte(labels))
	writeFile(t, tf, "test_lables.json", []byte("[1,2,3]"))
	if d, err = Open("cifar10", tf, true); err != nil || d.Len() != 20 || d.Labels[19] != 3 || !bytes.Equal(d.Image(4), pix[:3072]) {
		t.Fatalf("tfjs: %v", err)
	}
	if _, err = Open("cifar10", tf, false); err == nil || !strings.Contains(err.Error(), "4 images but the label file has 3") {
		t.Fatalf("tfjs count mismatch: %v", err)
	}
	// MNIST, gzip, and a count mismatch.
	mn := filepath.Join(root, "mnist")
	writeFile(t, mn, "train-images-idx3-ubyte.gz", gzipBytes(idxBytes([]int{3, 28, 28}, make([]byte, 3*784))))
	writeFile(t, mn, "train-labels-idx1-ubyte.gz", gzipBytes(idxBytes([]int{3}, []byte{1, 2, 9})))
	writeFile(t, mn, "t10k-images-idx3-ubyte", idxBytes([]int{2, 28, 28}, make([]byte, 2*784)))
	writeFile(t, mn, "t10k-labels-idx1-ubyte", idxBytes([]int{3}, []byte{1, 2, 3}))
	if d, err = Open("mnist", root, true); err != nil || d.Len() != 3 || d.C != 1 || d.H != 28 {
		t.Fatalf("mnist: %v", err)
	}
	if rgb := d.ToRGB(); rgb.C != 3 || len(rgb.Pixels) != 3*len(d.Pixels) {
		t.Fatal("ToRGB")
	}
	if _, err = Open("mnist", root, false); err == nil || !strings.Contains(err.Error(), "2 images") {
		t.Fatalf("mnist count mismatch: %v", err)
	}
	// STL-10.
	st := filepath.Join(root, "stl10", "stl10_binary")
	writeFile(t, st, "train_X.bin", stlBytes(synthImages(2, 96, 96, 3), 2))
	writeFile(t, st, "train_y.bin", []byte{1, 10})
	if d, err = Open("stl10", root, true); err != nil || d.Len() != 2 || d.Labels[1] != 9 {
		t.Fatalf("stl10: %v", err)
	}
	// CIFAR-100.
	writeFile(t, root, "cifar100/train.bin", make([]byte, 2*3074))
	if d, err = Open("cifar100", root, true); err != nil || d.Len() != 2 || d.NumClasses() != 100 {
		t.Fatalf("cifar100: %v", err)
	}
	// Missing data and unknown names.
	if _, err = Open("fashion-mnist", root, true); err == nil || !strings.Contains(err.Error(), "duelctl data fetch") {
		t.Fatalf("missing: %v", err)
	}
	if _, err = Open("imagenet", root, true); err == nil || !strings.Contains(err.Error(), "unknown dataset") {
		t.Fatalf("unknown: %v", err)
	}
	var fe *FormatError
	writeFile(t, root, "cifar10/cifar-10-batches-bin/test_batch.bin", []byte{1, 2, 3})
	if _, err = Open("cifar10", root, false); !errors.As(err, &fe) || !strings.Contains(fe.File, "test_batch.bin") {
		t.Fatalf("corrupt: %v", err)
	}
}

func TestOpenDefault(t *testing.T) {
	for _, train := range []bool{true, false} {
		d, err := Open("default", "", train)
		if err != nil {
			t.Fatal(err)
		}
		want := 100
		if train {
			want = 500
		}
		for c, n := range d.ClassCounts() {
			if n != want {
				t.Fatalf("embedded train=%v: class %d has %d images, want %d", train, c, n, want)
			}
		}
		mean, _ := d.MeanStd()
		// Real CIFAR-10 statistics, not noise or a blank image.
		if mean[0] < 0.45 || mean[0] > 0.53 || mean[2] < 0.40 || mean[2] > 0.49 {
			t.Fatalf("embedded mean %v, want close to CIFAR-10's (0.49, 0.48, 0.45)", mean)
		}
	}
}
