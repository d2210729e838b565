package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
)

// IDX format (MNIST, Fashion-MNIST): big-endian magic 0x0000TTDD where TT is
// the element type (only 0x08, unsigned byte, is used by these datasets) and
// DD the number of dimensions, then DD big-endian uint32 sizes, then the data.
// Files may be gzip-compressed (.gz); ParseIDX detects that by the content.

// maxIDXBytes bounds the data of one IDX file (the largest real one, MNIST's
// train-images, is 47 MB).
const maxIDXBytes = 1 << 30

// IDX is a parsed IDX file of unsigned bytes.
type IDX struct {
	Dims []int  // sizes, outermost first
	Data []byte // product(Dims) bytes
}

// ParseIDX parses an IDX file of unsigned bytes, plain or gzip-compressed.
// file names the input in errors.
func ParseIDX(b []byte, file string) (*IDX, error) {
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, formatErr(file, -1, "corrupt gzip header: %v", err)
		}
		plain, err := io.ReadAll(io.LimitReader(zr, maxIDXBytes+1024))
		if err != nil {
			return nil, formatErr(file, -1, "corrupt gzip stream after %d decompressed bytes: %v", len(plain), err)
		}
		file = file + " (decompressed)"
		b = plain
	}
	if len(b) < 4 {
		return nil, formatErr(file, 0, "file is %d bytes, too short for the 4-byte IDX magic number", len(b))
	}
	if b[0] != 0 || b[1] != 0 {
		return nil, formatErr(file, 0, "magic number %#08x, expected 0x000008DD (an IDX file of unsigned bytes)", binary.BigEndian.Uint32(b))
	}
	if b[2] != 0x08 {
		return nil, formatErr(file, 2, "IDX element type %#02x, expected 0x08 (unsigned byte)", b[2])
	}
	nd := int(b[3])
	if nd == 0 || nd > 4 {
		return nil, formatErr(file, 3, "IDX has %d dimensions, expected 1 to 4", nd)
	}
	head := 4 + 4*nd
	if len(b) < head {
		return nil, formatErr(file, int64(len(b)), "file ends inside the header: %d bytes, expected %d for %d dimensions", len(b), head, nd)
	}
	dims := make([]int, nd)
	total := 1
	for i := range dims {
		d := int(binary.BigEndian.Uint32(b[4+4*i:]))
		dims[i] = d
		if d == 0 {
			total = 0
		} else if total > maxIDXBytes/d {
			return nil, formatErr(file, int64(4+4*i), "dimensions %v exceed %d bytes", dims[:i+1], maxIDXBytes)
		} else {
			total *= d
		}
	}
	if got := len(b) - head; got != total {
		what := "truncated"
		if got > total {
			what = "trailing bytes"
		}
		return nil, formatErr(file, int64(len(b)), "%s: %d data bytes after the header, expected %d for dimensions %v", what, got, total, dims)
	}
	return &IDX{Dims: dims, Data: b[head:]}, nil
}

// idxImages checks that x holds N x H x W images and y N labels below
// classes, and returns them as a dataset's pixels (C = 1) and labels.
func idxImages(x, y *IDX, xFile, yFile string, classes int) (pixels []uint8, labels []int32, h, w int, err error) {
	if len(x.Dims) != 3 {
		return nil, nil, 0, 0, formatErr(xFile, -1, "IDX dimensions %v, expected 3 (images x rows x columns)", x.Dims)
	}
	if len(y.Dims) != 1 {
		return nil, nil, 0, 0, formatErr(yFile, -1, "IDX dimensions %v, expected 1 (one label per image)", y.Dims)
	}
	if x.Dims[0] != y.Dims[0] {
		return nil, nil, 0, 0, fmt.Errorf("%s has %d images but %s has %d labels, expected equal counts", xFile, x.Dims[0], yFile, y.Dims[0])
	}
	if x.Dims[0] == 0 || x.Dims[1] == 0 || x.Dims[2] == 0 {
		return nil, nil, 0, 0, formatErr(xFile, -1, "IDX dimensions %v, expected no empty dimension", x.Dims)
	}
	labels = make([]int32, len(y.Data))
	for i, v := range y.Data {
		if int(v) >= classes {
			return nil, nil, 0, 0, formatErr(yFile, int64(4+4+i), "label %d of image %d, expected 0..%d", v, i, classes-1)
		}
		labels[i] = int32(v)
	}
	return x.Data, labels, x.Dims[1], x.Dims[2], nil
}
