package data

// CIFAR binary format (https://www.cs.toronto.edu/~kriz/cifar.html): a file
// is a sequence of records, each made of the label byte(s) followed by the
// 32x32 image as 1024 red, 1024 green and 1024 blue bytes (row-major).

const (
	cifarSide  = 32
	cifarImage = cifarSide * cifarSide * 3
)

// ParseCIFAR10 parses a CIFAR-10 binary batch (data_batch_N.bin,
// test_batch.bin): records of 1 label byte (0..9) and 3072 pixel bytes. It
// returns the images as HWC bytes and the labels. file names the input in
// errors.
func ParseCIFAR10(b []byte, file string) (pixels []uint8, labels []int32, err error) {
	return parseCIFAR(b, file, 1, 0, 10)
}

// ParseCIFAR100 parses a CIFAR-100 binary file (train.bin, test.bin):
// records of a coarse label byte (0..19), a fine label byte (0..99) and 3072
// pixel bytes. fine selects which label is returned.
func ParseCIFAR100(b []byte, file string, fine bool) (pixels []uint8, labels []int32, err error) {
	if fine {
		return parseCIFAR(b, file, 2, 1, 100)
	}
	return parseCIFAR(b, file, 2, 0, 20)
}

// parseCIFAR parses records of nLabel label bytes (the one used at labelAt,
// which must be < classes) followed by a CHW 32x32x3 image.
func parseCIFAR(b []byte, file string, nLabel, labelAt, classes int) ([]uint8, []int32, error) {
	rec := nLabel + cifarImage
	if len(b) == 0 {
		return nil, nil, formatErr(file, -1, "empty file, expected records of %d bytes", rec)
	}
	if len(b)%rec != 0 {
		full := len(b) / rec
		return nil, nil, formatErr(file, int64(full*rec), "truncated record: file is %d bytes, not a multiple of the %d-byte record (%d whole records, then %d bytes)",
			len(b), rec, full, len(b)-full*rec)
	}
	n := len(b) / rec
	pixels := make([]uint8, n*cifarImage)
	labels := make([]int32, n)
	const plane = cifarSide * cifarSide
	for i := 0; i < n; i++ {
		r := b[i*rec : (i+1)*rec]
		l := int(r[labelAt])
		if l >= classes {
			return nil, nil, formatErr(file, int64(i*rec+labelAt), "record %d has label %d, expected 0..%d (is this the right CIFAR variant?)", i, l, classes-1)
		}
		labels[i] = int32(l)
		src := r[nLabel:]
		dst := pixels[i*cifarImage : (i+1)*cifarImage]
		for p := 0; p < plane; p++ {
			dst[3*p] = src[p]
			dst[3*p+1] = src[plane+p]
			dst[3*p+2] = src[2*plane+p]
		}
	}
	return pixels, labels, nil
}

// EncodeCIFAR10 writes images (HWC, 32x32x3) and labels as CIFAR-10 binary
// records, the inverse of ParseCIFAR10.
func EncodeCIFAR10(pixels []uint8, labels []int32) []byte {
	const plane = cifarSide * cifarSide
	out := make([]byte, 0, len(labels)*(cifarImage+1))
	for i, l := range labels {
		src := pixels[i*cifarImage : (i+1)*cifarImage]
		out = append(out, byte(l))
		for c := 0; c < 3; c++ {
			for p := 0; p < plane; p++ {
				out = append(out, src[3*p+c])
			}
		}
	}
	return out
}
