package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// MaxHeaderSize bounds the JSON header, as the reference implementation
// does (100 MB), so a corrupt size field cannot trigger a huge allocation.
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header key holding free-form string metadata.
const metadataKey = "__metadata__"

// entry is one tensor's header record, validated.
type entry struct {
	name       string
	dtype      DType
	shape      []int
	begin, end int64
}

// headerRecord is the JSON form of one tensor's header record.
type headerRecord struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// parseHeader decodes and validates the JSON header against a byte buffer
// of bufLen bytes. It returns the tensors ordered by offset and the
// metadata. Offsets must tile the buffer exactly: the first tensor starts at
// 0, each starts where the previous ends, the last ends at bufLen, and each
// spans exactly its dtype size times its element count.
func parseHeader(hdr []byte, bufLen int64) ([]entry, map[string]string, error) {
	if !utf8.Valid(hdr) {
		return nil, nil, errors.New("header is not valid UTF-8")
	}
	trimmed := bytes.TrimLeft(hdr, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, nil, errors.New("header is not a JSON object (expected it to start with '{')")
	}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("header JSON: %w", err)
	}
	var (
		entries []entry
		meta    map[string]string
		seen    = map[string]bool{}
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("header JSON: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("header JSON: key %v is not a string", tok)
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("header: duplicate key %q", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("header JSON: value of %q: %w", name, err)
		}
		if name == metadataKey {
			if meta, err = parseMetadata(raw); err != nil {
				return nil, nil, err
			}
			continue
		}
		e, err := parseRecord(name, raw)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("header JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("header JSON: trailing data after the object (offset %d)", dec.InputOffset())
	}
	if err := checkOffsets(entries, bufLen); err != nil {
		return nil, nil, err
	}
	return entries, meta, nil
}

// parseMetadata decodes the __metadata__ object, whose values must be strings.
func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("header: %s is not an object of strings", metadataKey)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("header: %s[%q] is %v, expected a string", metadataKey, k, v)
		}
		out[k] = s
	}
	return out, nil
}

// parseRecord validates one tensor record (dtype, shape and offsets).
func parseRecord(name string, raw json.RawMessage) (entry, error) {
	var r headerRecord
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return entry{}, fmt.Errorf("header: tensor %q: %w", name, err)
	}
	if r.DType == nil || r.Shape == nil || r.DataOffsets == nil {
		return entry{}, fmt.Errorf("header: tensor %q: expected fields dtype, shape and data_offsets", name)
	}
	dt := DType(*r.DType)
	if dt.Size() == 0 {
		return entry{}, fmt.Errorf("header: tensor %q: unknown dtype %q", name, *r.DType)
	}
	if !dt.supported() {
		return entry{}, fmt.Errorf("header: tensor %q: dtype %s is not supported (expected F32, F64, I32 or I64)", name, dt)
	}
	shape := make([]int, len(*r.Shape))
	for i, d := range *r.Shape {
		if d < 0 || d > maxElements {
			return entry{}, fmt.Errorf("header: tensor %q: bad dimension %d in shape %v", name, d, *r.Shape)
		}
		shape[i] = int(d)
	}
	n, err := numel(shape)
	if err != nil {
		return entry{}, fmt.Errorf("header: tensor %q: %w", name, err)
	}
	off := *r.DataOffsets
	if len(off) != 2 {
		return entry{}, fmt.Errorf("header: tensor %q: data_offsets has %d values, expected 2", name, len(off))
	}
	if off[0] < 0 || off[1] < off[0] {
		return entry{}, fmt.Errorf("header: tensor %q: bad data_offsets [%d, %d]", name, off[0], off[1])
	}
	if want := int64(n) * int64(dt.Size()); off[1]-off[0] != want {
		return entry{}, fmt.Errorf("header: tensor %q: data_offsets [%d, %d] span %d bytes, expected %d for %s%v",
			name, off[0], off[1], off[1]-off[0], want, dt, shape)
	}
	return entry{name: name, dtype: dt, shape: shape, begin: off[0], end: off[1]}, nil
}

// checkOffsets sorts entries by offset and checks that they tile [0, bufLen).
func checkOffsets(entries []entry, bufLen int64) error {
	slices.SortStableFunc(entries, func(a, b entry) int {
		if a.begin != b.begin {
			return cmpInt64(a.begin, b.begin)
		}
		return cmpInt64(a.end, b.end)
	})
	var pos int64
	for _, e := range entries {
		switch {
		case e.begin < pos:
			return fmt.Errorf("header: tensor %q: data_offsets [%d, %d] overlap the previous tensor (ending at %d)", e.name, e.begin, e.end, pos)
		case e.begin > pos:
			return fmt.Errorf("header: tensor %q: data_offsets [%d, %d] leave a gap after byte %d", e.name, e.begin, e.end, pos)
		case e.end > bufLen:
			return fmt.Errorf("header: tensor %q: data_offsets [%d, %d] run past the %d-byte data buffer", e.name, e.begin, e.end, bufLen)
		}
		pos = e.end
	}
	if pos != bufLen {
		return fmt.Errorf("header: tensors cover %d bytes, but the data buffer has %d", pos, bufLen)
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
