package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

func sample() []Tensor {
	return []Tensor{
		{Name: "w", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, -6.5}},
		{Name: "d", Shape: []int{2}, Data: []float64{1.0 / 3, -1e300}},
		{Name: "step", Shape: []int{}, Data: []int64{-42}},
		{Name: "ids", Shape: []int{3}, Data: []int32{7, -8, 9}},
		{Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	meta := map[string]string{"format": "pt", "step": "10"}
	if err := Write(path, sample(), meta); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Metadata, meta) {
		t.Errorf("metadata %v, want %v", f.Metadata, meta)
	}
	if len(f.Tensors) != len(sample()) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(sample()))
	}
	for _, want := range sample() {
		got, ok := f.Get(want.Name)
		if !ok {
			t.Fatalf("tensor %q missing", want.Name)
		}
		if !reflect.DeepEqual(got.Shape, want.Shape) || !reflect.DeepEqual(got.Data, want.Data) {
			t.Errorf("tensor %q = %v %v, want %v %v", want.Name, got.Shape, got.Data, want.Shape, want.Data)
		}
	}
	// Layout order: I64, F64, F32 (by name), I32.
	if got, want := f.Names(), []string{"step", "d", "empty", "w", "ids"}; !reflect.DeepEqual(got, want) {
		t.Errorf("file order %v, want %v", got, want)
	}
	raw, _ := os.ReadFile(path)
	if n := binary.LittleEndian.Uint64(raw); n%8 != 0 {
		t.Errorf("header size %d is not a multiple of 8", n)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestBadMetadata(t *testing.T) {
	err := Encode(&bytes.Buffer{}, sample(), map[string]string{"k": "\xfe"})
	if err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("error %v, want one about UTF-8", err)
	}
}

func TestNoMetadata(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, sample()[:1], nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), metadataKey) {
		t.Errorf("nil metadata written: %q", b.String())
	}
	f, err := Decode(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata != nil {
		t.Errorf("metadata %v, want nil", f.Metadata)
	}
}

// TestTorchFixture reads a file written from PyTorch by gen_fixture.py and
// checks that re-encoding it reproduces the same bytes.
func TestTorchFixture(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Read("testdata/torch.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata)
	}
	check := func(name string, shape []int, data any) {
		t.Helper()
		got, ok := f.Get(name)
		if !ok {
			t.Fatalf("tensor %q missing", name)
		}
		if !reflect.DeepEqual(got.Shape, shape) || !reflect.DeepEqual(got.Data, data) {
			t.Errorf("%q = %v %v, want %v %v", name, got.Shape, got.Data, shape, data)
		}
	}
	check("projector.0.weight", []int{2, 3}, []float32{-1, -0.5, 0, 0.5, 1, 1.5})
	check("bn1.num_batches_tracked", []int{}, []int64{7})
	check("double", []int{3}, []float64{1.0 / 3, -2.5, 1e300})
	check("labels", []int{4}, []int32{3, -1, 2147483647, 0})
	check("empty", []int{0, 3}, []float32{})
	var vals map[string][]float64
	jb, err := os.ReadFile("testdata/torch_values.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(jb, &vals); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, len(vals["layer1.0.conv1.weight"]))
	for i, v := range vals["layer1.0.conv1.weight"] {
		want[i] = float32(v)
	}
	check("layer1.0.conv1.weight", []int{2, 1, 3, 3}, want)

	var b bytes.Buffer
	if err := Encode(&b, f.Tensors, f.Metadata); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), raw) {
		t.Errorf("re-encoded file differs from the fixture:\n%q\n%q", b.Bytes(), raw)
	}
}

func TestTensorConversion(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	st := FromTensor("x", x.T())
	if st.DType() != F32 || !reflect.DeepEqual(st.Shape, []int{3, 2}) {
		t.Fatalf("FromTensor: %v %v", st.DType(), st.Shape)
	}
	y, err := st.ToTensor()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(y.Data(), []float32{1, 4, 2, 5, 3, 6}) {
		t.Errorf("ToTensor: %v", y.Data())
	}
	if _, err := (Tensor{Name: "i", Shape: []int{1}, Data: []int64{1}}).ToTensor(); err == nil {
		t.Error("ToTensor of I64: no error")
	}
	z, err := (Tensor{Name: "d", Shape: []int{2}, Data: []float64{0.5, 2}}).ToTensor()
	if err != nil || !reflect.DeepEqual(z.Data(), []float32{0.5, 2}) {
		t.Errorf("ToTensor of F64: %v %v", z, err)
	}
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"empty name", []Tensor{{Shape: []int{1}, Data: []float32{1}}}, "empty name"},
		{"reserved", []Tensor{{Name: metadataKey, Shape: []int{1}, Data: []float32{1}}}, "reserved"},
		{"duplicate", []Tensor{{Name: "a", Shape: []int{1}, Data: []float32{1}}, {Name: "a", Shape: []int{1}, Data: []int32{1}}}, "duplicate"},
		{"length", []Tensor{{Name: "a", Shape: []int{2, 2}, Data: []float32{1}}}, "1 values for shape [2 2]"},
		{"type", []Tensor{{Name: "a", Shape: []int{1}, Data: []uint8{1}}}, "[]uint8"},
		{"negative", []Tensor{{Name: "a", Shape: []int{-1}, Data: []float32{}}}, "negative"},
		{"utf8", []Tensor{{Name: "a\xff", Shape: []int{}, Data: []float32{1}}}, "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Encode(&bytes.Buffer{}, c.tensors, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// build assembles a file from a header string and a data buffer.
func build(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func TestBadInputs(t *testing.T) {
	eight := make([]byte, 8)
	good := build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, eight)
	if _, err := Decode(good); err != nil {
		t.Fatalf("good file: %v", err)
	}
	huge := binary.LittleEndian.AppendUint64(nil, 1<<40)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "at least 8"},
		{"short size", []byte{1, 2, 3}, "at least 8"},
		{"truncated header", good[:20], "runs past the end"},
		{"truncated data", good[:len(good)-3], "run past the 5-byte data buffer"},
		{"header beyond limit", append(huge, "{}"...), "exceeds the limit"},
		{"header beyond file", build(`{}`, nil)[:9], "runs past the end"},
		{"bad json", build(`{"a":{"dtype":"F32",`, nil), "header JSON"},
		{"not object", build(`[1,2]`, nil), "not a JSON object"},
		{"trailing data", build(`{} {}`, nil), "trailing data"},
		{"trailing garbage", build(`{}x`, nil), "header JSON"},
		{"not utf8", build("{\"\xff\":1}", nil), "UTF-8"},
		{"unknown dtype", build(`{"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}`, eight), `unknown dtype "F33"`},
		{"unsupported dtype", build(`{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, eight), "F16 is not supported"},
		{"missing field", build(`{"a":{"dtype":"F32","shape":[2]}}`, eight), "expected fields"},
		{"unknown field", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, eight), "unknown field"},
		{"negative dim", build(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, eight), "bad dimension"},
		{"huge shape", build(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, eight), "too many elements"},
		{"shape mismatch", build(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight), "expected 12"},
		{"dtype size mismatch", build(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}`, eight), "expected 16"},
		{"offsets count", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}}`, eight), "has 1 values, expected 2"},
		{"offsets reversed", build(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, eight), "bad data_offsets"},
		{"out of range", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, eight), "gap"},
		{"past buffer", build(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, eight), "run past"},
		{"gap", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, make([]byte, 12)), "gap"},
		{"overlap", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)), "overlap"},
		{"leftover", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 12)), "cover 8 bytes, but the data buffer has 12"},
		{"duplicate", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), "duplicate key"},
		{"bad metadata", build(`{"__metadata__":{"k":1}}`, nil), "expected a string"},
		{"metadata not object", build(`{"__metadata__":[1]}`, nil), "not an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.file)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestReadErrorsNameFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v does not name %s", err, path)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file: no error")
	}
}

func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	if err := Encode(&b, sample(), map[string]string{"a": "b"}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add(build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(build(`{"a":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}}`, make([]byte, 12)))
	f.Add(build(`{}`, nil))
	if raw, err := os.ReadFile("testdata/torch.safetensors"); err == nil {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode and decode to the same content.
		var out bytes.Buffer
		if err := Encode(&out, file.Tensors, file.Metadata); err != nil {
			t.Fatalf("re-encoding a decoded file: %v", err)
		}
		again, err := Decode(out.Bytes())
		if err != nil {
			t.Fatalf("decoding a re-encoded file: %v", err)
		}
		for _, want := range file.Tensors {
			got, ok := again.Get(want.Name)
			if !ok || !reflect.DeepEqual(got.Shape, want.Shape) || !sameBits(got.Data, want.Data) {
				t.Fatalf("tensor %q changed in a round trip", want.Name)
			}
		}
	})
}

// sameBits compares typed slices bit for bit (NaNs included).
func sameBits(a, b any) bool {
	var x, y bytes.Buffer
	if writeElements(&x, a, nil) != nil || writeElements(&y, b, nil) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

func BenchmarkRead(b *testing.B) {
	data := make([]float32, 1<<20)
	path := filepath.Join(b.TempDir(), "bench.safetensors")
	if err := Write(path, []Tensor{{Name: "w", Shape: []int{len(data)}, Data: data}}, nil); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(4 * len(data)))
	for b.Loop() {
		if _, err := Read(path); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	data := make([]float32, 1<<20)
	path := filepath.Join(b.TempDir(), "bench.safetensors")
	b.SetBytes(int64(4 * len(data)))
	for b.Loop() {
		if err := Write(path, []Tensor{{Name: "w", Shape: []int{len(data)}, Data: data}}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
