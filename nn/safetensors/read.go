package safetensors

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// File is the decoded content of a safetensors file.
type File struct {
	// Tensors are the file's tensors in the order of their data offsets.
	Tensors []Tensor
	// Metadata is the header's __metadata__ object (nil when absent).
	Metadata map[string]string
	index    map[string]int
}

// Get returns the tensor called name.
func (f *File) Get(name string) (Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return Tensor{}, false
	}
	return f.Tensors[i], true
}

// Names returns the tensor names in file order.
func (f *File) Names() []string {
	names := make([]string, len(f.Tensors))
	for i, t := range f.Tensors {
		names[i] = t.Name
	}
	return names
}

// Read reads and validates the safetensors file at path. Errors name the
// file and what is wrong with it.
func Read(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := decodeFrom(bufio.NewReaderSize(fh, 1<<20), st.Size())
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return f, nil
}

// Decode parses a whole safetensors file held in memory.
func Decode(data []byte) (*File, error) {
	f, err := decodeFrom(&sliceReader{b: data}, int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

// sliceReader is a bytes.Reader that never copies more than asked.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// decodeFrom reads a file of size bytes from r: the 8-byte header size, the
// header, then the tensors in offset order.
func decodeFrom(r io.Reader, size int64) (*File, error) {
	if size < 8 {
		return nil, fmt.Errorf("file has %d bytes, expected at least 8 (the header size)", size)
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("reading the header size: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("header size %d exceeds the limit of %d bytes", n, MaxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, fmt.Errorf("header size %d runs past the end of the %d-byte file", n, size)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("reading the %d-byte header: %w", n, err)
	}
	entries, meta, err := parseHeader(hdr, size-8-int64(n))
	if err != nil {
		return nil, err
	}
	f := &File{Metadata: meta, Tensors: make([]Tensor, len(entries)), index: make(map[string]int, len(entries))}
	var buf []byte
	for i, e := range entries {
		nb := int(e.end - e.begin)
		if cap(buf) < nb {
			buf = make([]byte, nb)
		}
		buf = buf[:nb]
		if _, err := io.ReadFull(r, buf); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("tensor %q: file is truncated", e.name)
			}
			return nil, fmt.Errorf("tensor %q: %w", e.name, err)
		}
		f.Tensors[i] = Tensor{Name: e.name, Shape: e.shape, Data: decodeElements(e.dtype, buf)}
		f.index[e.name] = i
	}
	return f, nil
}

// decodeElements converts little-endian bytes into a typed slice.
func decodeElements(dt DType, b []byte) any {
	le := binary.LittleEndian
	switch dt {
	case F32:
		out := make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return out
	case F64:
		out := make([]float64, len(b)/8)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return out
	case I32:
		out := make([]int32, len(b)/4)
		for i := range out {
			out[i] = int32(le.Uint32(b[4*i:]))
		}
		return out
	case I64:
		out := make([]int64, len(b)/8)
		for i := range out {
			out[i] = int64(le.Uint64(b[8*i:]))
		}
		return out
	}
	panic("safetensors: decodeElements: unsupported dtype " + string(dt))
}
