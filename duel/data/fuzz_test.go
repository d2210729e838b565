package data

import (
	"image"
	"testing"
)

// The fuzz targets check that no input makes a parser panic or return
// inconsistent sizes. Run one with
//
//	go test -run='^$' -fuzz=FuzzCIFAR -fuzztime=30s ./duel/data

func FuzzCIFAR(f *testing.F) {
	f.Add(EncodeCIFAR10(synthImages(1, 32, 32, 3), []int32{3}))
	f.Add([]byte{})
	f.Add(make([]byte, 3074))
	f.Fuzz(func(t *testing.T, b []byte) {
		pix, lab, err := ParseCIFAR10(b, "f.bin")
		if err == nil && len(pix) != len(lab)*3072 {
			t.Fatalf("%d pixel bytes for %d labels", len(pix), len(lab))
		}
		pix, lab, err = ParseCIFAR100(b, "f.bin", true)
		if err == nil && len(pix) != len(lab)*3072 {
			t.Fatalf("%d pixel bytes for %d labels", len(pix), len(lab))
		}
	})
}

func FuzzTFJSStrip(f *testing.F) {
	strip, _ := EncodeTFJSStrip(synthImages(2, 32, 32, 3), 2)
	f.Add(strip)
	f.Add(encodePNG(image.NewGray(image.Rect(0, 0, 1024, 1))))
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pix, n, err := ParseTFJSStrip(b, "f.png")
		if err == nil && len(pix) != n*3072 {
			t.Fatalf("%d pixel bytes for %d images", len(pix), n)
		}
	})
}

func FuzzLabelsJSON(f *testing.F) {
	f.Add([]byte("[0,1,9]"))
	f.Add([]byte("[]"))
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		labels, err := ParseLabelsJSON(b, "f.json", 10)
		if err == nil {
			for _, l := range labels {
				if l < 0 || l > 9 {
					t.Fatalf("label %d accepted", l)
				}
			}
		}
	})
}

func FuzzSTL10(f *testing.F) {
	f.Add(stlBytes(synthImages(1, 96, 96, 3), 1))
	f.Add([]byte{1, 2, 10})
	f.Fuzz(func(t *testing.T, b []byte) {
		pix, n, err := ParseSTL10Images(b, "f_X.bin")
		if err == nil && len(pix) != n*stlImage {
			t.Fatalf("%d pixel bytes for %d images", len(pix), n)
		}
		labels, err := ParseSTL10Labels(b, "f_y.bin")
		if err == nil && len(labels) != len(b) {
			t.Fatal("label count")
		}
	})
}

func FuzzIDX(f *testing.F) {
	raw := idxBytes([]int{2, 2, 2}, make([]byte, 8))
	f.Add(raw)
	f.Add(gzipBytes(raw))
	f.Add(idxBytes([]int{3}, []byte{1, 2, 3}))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ParseIDX(b, "f.idx")
		if err != nil {
			return
		}
		total := 1
		for _, d := range x.Dims {
			total *= d
		}
		if total != len(x.Data) {
			t.Fatalf("dims %v but %d bytes", x.Dims, len(x.Data))
		}
	})
}

func FuzzDecodeImage(f *testing.F) {
	f.Add(encodePNG(image.NewRGBA(image.Rect(0, 0, 3, 2))))
	f.Add(encodePNG(image.NewGray16(image.Rect(0, 0, 1, 5))))
	f.Add([]byte("GIF89a"))
	f.Add(emptyFrameGIF)
	f.Add([]byte{0xff, 0xd8, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		pix, h, w, err := DecodeImage(b, "f.img")
		if err == nil && (len(pix) != h*w*3 || h < 1 || w < 1) {
			t.Fatalf("%d bytes for %dx%d", len(pix), h, w)
		}
	})
}

// emptyFrameGIF is a GIF of a 4x4 screen whose first frame is 4 x 0
// pixels: image.DecodeConfig reports the screen, the decoded frame is
// empty.
var emptyFrameGIF = []byte("GIF89a\x04\x00\x04\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff,\x00\x00\x00\x00\x04\x00\x00\x00\x00\x02\x01,\x00;")
