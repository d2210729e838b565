package npy

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReadNumpyFixtures reads files written by NumPy 1.24 (testdata, made
// once with np.save and numpy.lib.format.write_array).
func TestReadNumpyFixtures(t *testing.T) {
	f4 := []float32{0, 0.25, 0.5, 0.75, 1, 1.25}
	f8 := make([]float64, 6) // (arange(6) - 2.5) * 1e100, rounded as NumPy does
	for i := range f8 {
		x := float64(i) - 2.5
		f8[i] = x * 1e100
	}
	for _, c := range []struct {
		file string
		want *Array
	}{
		{"f4_2x3.npy", &Array{Shape: []int{2, 3}, Float32: f4}},
		{"f4_2x3_v2.npy", &Array{Shape: []int{2, 3}, Float32: f4}},
		{"f4_2x3_v3.npy", &Array{Shape: []int{2, 3}, Float32: f4}},
		{"f8_3x2.npy", &Array{Shape: []int{3, 2}, Float64: f8}},
		{"i4_5.npy", &Array{Shape: []int{5}, Int32: []int32{-2, -1, 0, 7, math.MaxInt32}}},
		{"i8_4.npy", &Array{Shape: []int{4}, Int64: []int64{math.MinInt64, -1, 0, math.MaxInt64}}},
		{"f4_0x3.npy", &Array{Shape: []int{0, 3}, Float32: []float32{}}},
		{"f8_scalar.npy", &Array{Shape: []int{}, Float64: []float64{3.5}}},
		{"i8_2x2x2.npy", &Array{Shape: []int{2, 2, 2}, Int64: []int64{0, 1, 2, 3, 4, 5, 6, 7}}},
	} {
		got, err := ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.file, got, c.want)
		}
	}
}

func TestReadRefusesNumpyFixtures(t *testing.T) {
	for file, want := range map[string]string{
		"big_endian_f4.npy": `big-endian dtype ">f4"`,
		"fortran_f4.npy":    "Fortran order",
		"i2_3.npy":          `unsupported dtype "<i2"`,
		"bool_3.npy":        `unsupported dtype "|b1"`,
		"structured.npy":    "structured dtype",
	} {
		_, err := ReadFile(filepath.Join("testdata", file))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: error %v, want it to name the file and mention %q", file, err, want)
		}
	}
}

// TestWriteMatchesNumpy checks that Write produces NumPy's bytes exactly.
func TestWriteMatchesNumpy(t *testing.T) {
	for _, file := range []string{"f4_2x3.npy", "f8_3x2.npy", "i4_5.npy", "i8_4.npy", "f4_0x3.npy", "f8_scalar.npy", "i8_2x2x2.npy"} {
		want, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		a, err := Read(bytes.NewReader(want))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := Write(&got, a); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: written bytes differ from NumPy's:\n%q\n%q", file, got.Bytes(), want)
		}
	}
}

// npyBytes builds a .npy file by hand.
func npyBytes(version byte, header string, data []byte) []byte {
	b := []byte(magic)
	b = append(b, version, 0)
	if version == 1 {
		b = append(b, byte(len(header)), byte(len(header)>>8))
	} else {
		b = append(b, byte(len(header)), byte(len(header)>>8), byte(len(header)>>16), byte(len(header)>>24))
	}
	b = append(b, header...)
	return append(b, data...)
}

func TestReadHandMade(t *testing.T) {
	four := []byte{0, 0, 128, 63} // float32 1.0
	for _, c := range []struct {
		name string
		file []byte
		want string // error substring, "" for success
	}{
		{"ok", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", four), ""},
		{"double quotes, any order, spaces", npyBytes(1, `{ "shape":(1 ,1) ,"fortran_order":False,"descr":"<f4"}`, four), ""},
		{"python2 long", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1L,)}", four), ""},
		{"fortran 1-D is C order", npyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1,)}", four), ""},
		{"v2", npyBytes(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", four), ""},
		{"empty", nil, "preamble missing"},
		{"bad magic", []byte("\x93NUMPX\x01\x00\x00\x00"), "does not start with"},
		{"version 4", npyBytes(4, "{}", nil), "version 4.0"},
		{"truncated header", npyBytes(1, "{'descr'", nil)[:12], "header truncated"},
		{"not a dict", npyBytes(1, "['<f4']", four), "expected '{'"},
		{"missing key", npyBytes(1, "{'descr': '<f4', 'shape': (1,)}", four), `missing key "fortran_order"`},
		{"extra key", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", four), `unexpected key "x"`},
		{"repeated key", npyBytes(1, "{'descr': '<f4', 'descr': '<f4'}", four), "repeated"},
		{"bad bool", npyBytes(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", four), "True or False"},
		{"not a tuple", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", four), "not a tuple"},
		{"negative dim", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", four), "non-negative integer"},
		{"huge shape", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000, 100000000)}", four), "more than"},
		{"truncated data", npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)}", four), "data truncated"},
		{"trailing data", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", append(four, 0)), "unexpected data after"},
		{"fortran 2-D", npyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1)}", four), "Fortran order"},
		{"big-endian", npyBytes(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (0,)}", nil), "big-endian"},
		{"object", npyBytes(1, "{'descr': '|O', 'fortran_order': False, 'shape': (0,)}", nil), "unsupported dtype"},
		{"unterminated", npyBytes(1, "{'descr': '<f4", nil), "unterminated"},
		{"text after", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", four), "after the header"},
		{"non-ascii v1", npyBytes(1, "{'descr': '<f4\xe9', 'fortran_order': False, 'shape': (1,)}", four), "non-ASCII"},
		{"bad utf8 v3", npyBytes(3, "{'descr': '<f4\xff', 'fortran_order': False, 'shape': (1,)}", four), "UTF-8"},
		{"huge v2 header", append([]byte(magic+"\x02\x00"), 0, 0, 0, 1), "header of"},
	} {
		a, err := Read(bytes.NewReader(c.file))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && (a.Len() != 1 || a.Float32[0] != 1):
			t.Errorf("%s: got %+v", c.name, a)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestWriteFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, a := range []*Array{
		{Shape: []int{2, 2}, Float32: []float32{1, -2, float32(math.Inf(1)), 4}},
		{Shape: []int{3}, Int64: []int64{5, -6, 7}},
		{Shape: []int{1, 1, 1}, Int32: []int32{9}},
		{Shape: []int{0}, Float64: []float64{}},
	} {
		path := filepath.Join(dir, "a.npy")
		if err := WriteFile(path, a); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("round trip of %+v: %+v %v", a, got, err)
		}
		raw, _ := os.ReadFile(path)
		if hl := int(raw[8]) | int(raw[9])<<8; (10+hl)%64 != 0 {
			t.Fatalf("data starts at %d, not a multiple of 64", 10+hl)
		}
	}
	if err := WriteFile(filepath.Join(dir, "bad.npy"), &Array{Shape: []int{3}, Int64: []int64{1}}); err == nil {
		t.Fatal("inconsistent array written")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestMatrixHelpers(t *testing.T) {
	a := &Array{Shape: []int{1, 2}, Float64: []float64{1.5, 2}}
	if d, r, c, err := a.Float32Matrix(); err != nil || r != 1 || c != 2 || d[0] != 1.5 {
		t.Fatalf("%v %d %d %v", d, r, c, err)
	}
	if _, _, _, err := (&Array{Shape: []int{2}, Float32: []float32{1, 2}}).Float32Matrix(); err == nil {
		t.Fatal("1-D accepted as a matrix")
	}
	if _, _, _, err := (&Array{Shape: []int{1, 1}, Int32: []int32{1}}).Float32Matrix(); err == nil {
		t.Fatal("int32 accepted as float")
	}
	if v, err := (&Array{Shape: []int{1, 1, 2}, Float64: []float64{0.5, -2}}).Float32Values(); err != nil || len(v) != 2 || v[1] != -2 {
		t.Fatalf("Float32Values of float64: %v %v", v, err)
	}
	if _, err := (&Array{Shape: []int{1}, Int64: []int64{1}}).Float32Values(); err == nil || !strings.Contains(err.Error(), "expected float32 or float64") {
		t.Fatalf("Float32Values of int64: %v", err)
	}
	if v, err := (&Array{Shape: []int{2}, Int32: []int32{-1, 3}}).Int64Vector(); err != nil || v[1] != 3 {
		t.Fatalf("%v %v", v, err)
	}
	if _, err := (&Array{Shape: []int{1, 1}, Int64: []int64{1}}).Int64Vector(); err == nil {
		t.Fatal("2-D accepted as a vector")
	}
}

func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.npy"))
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Add(npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", []byte{0, 0, 128, 63}))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// What reads must write and read back the same.
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatalf("read %+v but cannot write it: %v", a, err)
		}
		b, err := Read(&buf)
		if err != nil {
			t.Fatalf("rewritten array does not read: %v", err)
		}
		if !reflect.DeepEqual(a.Shape, b.Shape) || a.DType() != b.DType() || a.Len() != b.Len() {
			t.Fatalf("round trip changed %+v into %+v", a, b)
		}
	})
}
