package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unicode/utf8"
)

// magic starts every .npy file.
const magic = "\x93NUMPY"

// maxHeader bounds the header length accepted (NumPy itself refuses
// headers above 10000 bytes by default).
const maxHeader = 1 << 16

// ReadFile reads a .npy file. Errors name the file.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := Read(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Read reads one .npy array from r, which must hold nothing after it.
func Read(r io.Reader) (*Array, error) {
	pre := make([]byte, len(magic)+2)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, fmt.Errorf("not a .npy file: %d-byte preamble missing (%w)", len(pre), err)
	}
	if string(pre[:len(magic)]) != magic {
		return nil, errors.New(`not a .npy file: it does not start with "\x93NUMPY"`)
	}
	major, minor := pre[len(magic)], pre[len(magic)+1]
	var hlen int
	switch {
	case major == 1 && minor == 0:
		var n uint16
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return nil, fmt.Errorf("npy header length: %w", err)
		}
		hlen = int(n)
	case (major == 2 || major == 3) && minor == 0:
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return nil, fmt.Errorf("npy header length: %w", err)
		}
		if n > maxHeader {
			return nil, fmt.Errorf("npy header of %d bytes, expected at most %d", n, maxHeader)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("npy format version %d.%d, expected 1.0, 2.0 or 3.0", major, minor)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, fmt.Errorf("npy header truncated: %w", err)
	}
	if major == 3 && !utf8.Valid(hb) {
		return nil, errors.New("npy 3.0 header is not valid UTF-8")
	}
	if major < 3 {
		for _, c := range hb {
			if c >= 0x80 {
				return nil, fmt.Errorf("npy %d.0 header has a non-ASCII byte 0x%x", major, c)
			}
		}
	}
	h, err := parseHeader(string(hb))
	if err != nil {
		return nil, err
	}
	return readData(r, h)
}

// readData reads and decodes the array data described by h.
func readData(r io.Reader, h header) (*Array, error) {
	t, ok := dtypes[h.descr]
	if !ok {
		return nil, unsupported(h.descr)
	}
	if h.fortran && len(h.shape) > 1 {
		return nil, fmt.Errorf("array of shape %v in Fortran order, expected C order (write it with np.ascontiguousarray)", h.shape)
	}
	n := 1
	for _, d := range h.shape {
		n *= d
	}
	size := int64(n) * int64(t.size)
	// Read through a buffer that grows with what is actually there, so that
	// a header announcing terabytes cannot make us allocate them.
	var buf bytes.Buffer
	got, err := io.CopyN(&buf, r, size)
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("data truncated: shape %v of %s needs %d bytes, found %d", h.shape, t.name, size, got)
		}
		return nil, fmt.Errorf("reading data: %w", err)
	}
	var extra [1]byte
	if k, _ := r.Read(extra[:]); k > 0 {
		return nil, fmt.Errorf("unexpected data after the %d elements of shape %v", n, h.shape)
	}
	b := buf.Bytes()
	a := &Array{Shape: h.shape}
	le := binary.LittleEndian
	switch t.name {
	case "float32":
		a.Float32 = make([]float32, n)
		for i := range a.Float32 {
			a.Float32[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
	case "float64":
		a.Float64 = make([]float64, n)
		for i := range a.Float64 {
			a.Float64[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
	case "int32":
		a.Int32 = make([]int32, n)
		for i := range a.Int32 {
			a.Int32[i] = int32(le.Uint32(b[4*i:]))
		}
	case "int64":
		a.Int64 = make([]int64, n)
		for i := range a.Int64 {
			a.Int64[i] = int64(le.Uint64(b[8*i:]))
		}
	}
	return a, nil
}

// unsupported explains why a descr is refused.
func unsupported(descr string) error {
	const want = "expected little-endian float32, float64, int32 or int64 ('<f4', '<f8', '<i4', '<i8')"
	if len(descr) == 3 && descr[0] == '>' {
		if _, ok := dtypes["<"+descr[1:]]; ok {
			return fmt.Errorf("big-endian dtype %q, %s (convert with arr.astype(arr.dtype.newbyteorder('<')))", descr, want)
		}
	}
	return fmt.Errorf("unsupported dtype %q, %s", descr, want)
}
