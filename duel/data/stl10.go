package data

// STL-10 binary format (https://cs.stanford.edu/~acoates/stl10/): *_X.bin
// holds 96x96x3 images, each stored channel by channel and, within a channel,
// column-major (the byte of pixel (y, x) of channel c is at c*9216 + x*96 + y).
// *_y.bin holds one label byte per image, 1..10.

const (
	stlSide  = 96
	stlImage = stlSide * stlSide * 3
)

// ParseSTL10Images parses an STL-10 *_X.bin file into HWC 96x96x3 images.
func ParseSTL10Images(b []byte, file string) (pixels []uint8, n int, err error) {
	if len(b) == 0 {
		return nil, 0, formatErr(file, -1, "empty file, expected 96x96x3 images of %d bytes", stlImage)
	}
	if len(b)%stlImage != 0 {
		full := len(b) / stlImage
		return nil, 0, formatErr(file, int64(full*stlImage), "truncated image: file is %d bytes, not a multiple of %d (%d whole images)", len(b), stlImage, full)
	}
	n = len(b) / stlImage
	pixels = make([]uint8, len(b))
	const plane = stlSide * stlSide
	for i := 0; i < n; i++ {
		src := b[i*stlImage : (i+1)*stlImage]
		dst := pixels[i*stlImage : (i+1)*stlImage]
		for c := 0; c < 3; c++ {
			for x := 0; x < stlSide; x++ {
				col := src[c*plane+x*stlSide : c*plane+(x+1)*stlSide]
				for y, v := range col {
					dst[(y*stlSide+x)*3+c] = v
				}
			}
		}
	}
	return pixels, n, nil
}

// ParseSTL10Labels parses an STL-10 *_y.bin file: one byte per image, 1..10,
// returned as 0..9.
func ParseSTL10Labels(b []byte, file string) ([]int32, error) {
	if len(b) == 0 {
		return nil, formatErr(file, -1, "empty file, expected one label byte (1..10) per image")
	}
	labels := make([]int32, len(b))
	for i, v := range b {
		if v < 1 || v > 10 {
			return nil, formatErr(file, int64(i), "label byte %d, expected 1..10", v)
		}
		labels[i] = int32(v) - 1
	}
	return labels, nil
}
