package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/duel-ssl/duel/internal/atomicfile"
)

// Write stores tensors and optional metadata at path in the safetensors
// format. The file is written to a temporary file in the same directory and
// renamed into place, so readers never see a partial file.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	err := atomicfile.Write(path, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		if err := Encode(w, tensors, metadata); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

// Encode writes tensors and optional metadata to w in the safetensors
// format. Tensors are laid out as the reference writer does: by dtype
// (I64, F64, F32, I32) and then by name; the header is padded with spaces
// to a multiple of 8 bytes. Names must be non-empty, unique and not
// "__metadata__"; each tensor's data length must match its shape.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	order, err := layout(tensors)
	if err != nil {
		return err
	}
	hdr, err := encodeHeader(order, metadata)
	if err != nil {
		return err
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<16)
	for _, t := range order {
		if err := writeElements(w, t.Data, buf); err != nil {
			return err
		}
	}
	return nil
}

// layout validates tensors and returns them in file order.
func layout(tensors []Tensor) ([]Tensor, error) {
	seen := make(map[string]bool, len(tensors))
	for _, t := range tensors {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("tensor with an empty name")
		case t.Name == metadataKey:
			return nil, fmt.Errorf("tensor name %q is reserved", metadataKey)
		case seen[t.Name]:
			return nil, fmt.Errorf("duplicate tensor name %q", t.Name)
		case !utf8.ValidString(t.Name):
			return nil, fmt.Errorf("tensor name %q is not valid UTF-8", t.Name)
		}
		seen[t.Name] = true
		_, n, err := dtypeOf(t.Data)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		want, err := numel(t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if n != want {
			return nil, fmt.Errorf("tensor %q: %d values for shape %v (%d elements)", t.Name, n, t.Shape, want)
		}
	}
	order := slices.Clone(tensors)
	slices.SortStableFunc(order, func(a, b Tensor) int {
		if ra, rb := a.DType().rank(), b.DType().rank(); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Name, b.Name)
	})
	return order, nil
}

// encodeHeader returns the JSON header for tensors in file order, padded
// with spaces to a multiple of 8 bytes.
func encodeHeader(order []Tensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	writeKey := func(k string) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, err := marshal(k)
		if err != nil {
			return err
		}
		b.Write(kb)
		b.WriteByte(':')
		return nil
	}
	if metadata != nil {
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, fmt.Errorf("metadata %q: %q is not valid UTF-8", k, v)
			}
		}
		if err := writeKey(metadataKey); err != nil {
			return nil, err
		}
		mb, err := marshal(metadata) // map keys are sorted
		if err != nil {
			return nil, err
		}
		b.Write(mb)
	}
	var pos int64
	for _, t := range order {
		if err := writeKey(t.Name); err != nil {
			return nil, err
		}
		dt, n, _ := dtypeOf(t.Data)
		end := pos + int64(n)*int64(dt.Size())
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		rb, err := marshal(struct {
			DType       DType   `json:"dtype"`
			Shape       []int   `json:"shape"`
			DataOffsets []int64 `json:"data_offsets"`
		}{dt, shape, []int64{pos, end}})
		if err != nil {
			return nil, err
		}
		b.Write(rb)
		pos = end
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping and without a newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// writeElements writes a typed slice as little-endian bytes through buf.
func writeElements(w io.Writer, data any, buf []byte) error {
	le := binary.LittleEndian
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	const chunk = 1 << 16
	switch v := data.(type) {
	case []float32:
		for _, x := range v {
			buf = le.AppendUint32(buf, math.Float32bits(x))
			if len(buf) >= chunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	case []float64:
		for _, x := range v {
			buf = le.AppendUint64(buf, math.Float64bits(x))
			if len(buf) >= chunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	case []int32:
		for _, x := range v {
			buf = le.AppendUint32(buf, uint32(x))
			if len(buf) >= chunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	case []int64:
		for _, x := range v {
			buf = le.AppendUint64(buf, uint64(x))
			if len(buf) >= chunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}
