package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// synthImages returns n HWC images whose bytes encode (image, position) so
// that any layout mistake shows.
func synthImages(n, h, w, c int) []uint8 {
	p := make([]uint8, n*h*w*c)
	for i := range p {
		p[i] = uint8(i*7 + i/(h*w*c)*13)
	}
	return p
}

// writeFile writes b to dir/name and returns the path.
func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// idxBytes encodes an IDX file of unsigned bytes.
func idxBytes(dims []int, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	return b.Bytes()
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// stlBytes encodes HWC 96x96x3 images in STL-10's channel-major,
// column-major layout.
func stlBytes(pix []uint8, n int) []byte {
	out := make([]byte, len(pix))
	for i := 0; i < n; i++ {
		for c := 0; c < 3; c++ {
			for x := 0; x < stlSide; x++ {
				for y := 0; y < stlSide; y++ {
					out[i*stlImage+c*stlSide*stlSide+x*stlSide+y] = pix[i*stlImage+(y*stlSide+x)*3+c]
				}
			}
		}
	}
	return out
}
