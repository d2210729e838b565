package wisdom

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type entry struct {
	Kernel string `json:"kernel"`
	KC     int    `json:"kc"`
}

func TestPathFrom(t *testing.T) {
	cache := func() (string, error) { return "/home/u/.cache", nil }
	noCache := func() (string, error) { return "", errors.New("no HOME") }
	for _, tc := range []struct {
		env   string
		cache func() (string, error)
		want  string
		ok    bool
	}{
		{"", cache, filepath.Join("/home/u/.cache", "duel", "wisdom.json"), true},
		{"off", cache, "", false},
		{" OFF ", cache, "", false},
		{"0", cache, "", false},
		{"none", cache, "", false},
		{"/tmp/w.json", cache, "/tmp/w.json", true},
		{"", noCache, "", false},
		{"rel/w.json", noCache, "rel/w.json", true},
	} {
		got, ok := pathFrom(tc.env, tc.cache)
		if got != tc.want || ok != tc.ok {
			t.Errorf("pathFrom(%q) = %q, %v; want %q, %v", tc.env, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseBad(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "", "not a wisdom file"},
		{"garbage", "\x00\x01binary", "not a wisdom file"},
		{"truncated", `{"format": "duel-wisdom", "version": 1, "cpus": {`, "not a wisdom file"},
		{"array", `[1, 2]`, "not a wisdom file"},
		{"other format", `{"format": "fftw", "version": 1}`, `format "fftw"`},
		{"no format", `{"version": 1}`, `format ""`},
		{"newer version", `{"format": "duel-wisdom", "version": 2}`, "version 2"},
		{"wrong types", `{"format": "duel-wisdom", "version": "1"}`, "not a wisdom file"},
		{"cpus not an object", `{"format": "duel-wisdom", "version": 1, "cpus": [1]}`, "not a wisdom file"},
		{"entry not an object", `{"format": "duel-wisdom", "version": 1, "cpus": {"k": {"gemm.sgemm": 3}}}`, "not a JSON object"},
		{"null entry", `{"format": "duel-wisdom", "version": 1, "cpus": {"k": {"gemm.sgemm": null}}}`, "not a JSON object"},
		{"empty key", `{"format": "duel-wisdom", "version": 1, "cpus": {"": {}}}`, "empty CPU key"},
		{"closing brace after", `{"format": "duel-wisdom", "version": 1}}`, "data after the JSON object"},
		{"closing bracket after", `{"format": "duel-wisdom", "version": 1}]`, "data after the JSON object"},
		{"empty name", `{"format": "duel-wisdom", "version": 1, "cpus": {"k": {"": {}}}}`, "empty entry name"},
		{"trailing data", `{"format": "duel-wisdom", "version": 1} {}`, "data after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", tc.data, err, tc.want)
			}
		})
	}
}

func TestParseGood(t *testing.T) {
	for _, data := range []string{
		`{"format": "duel-wisdom", "version": 1}`,
		`{"format": "duel-wisdom", "version": 1, "cpus": {}}`,
		`{"format": "duel-wisdom", "version": 1, "cpus": {"k": null}}`,
		`{"format": "duel-wisdom", "version": 1, "cpus": {"k": {"gemm.sgemm": {"kernel": "avx512", "kc": 432}}}, "note": "x"}`,
	} {
		f, err := Parse([]byte(data))
		if err != nil {
			t.Errorf("Parse(%s): %v", data, err)
			continue
		}
		if f.CPUs == nil {
			t.Errorf("Parse(%s): nil CPUs", data)
		}
	}
}

func TestLookupSet(t *testing.T) {
	f := New()
	var e entry
	if ok, err := f.Lookup("cpu", "gemm.sgemm", &e); ok || err != nil {
		t.Fatalf("Lookup on an empty file = %v, %v", ok, err)
	}
	if err := f.Set("cpu", "gemm.sgemm", entry{"avx512", 432}); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("cpu", "nn.conv", map[string]int{"winograd_min_c": 16}); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.Lookup("cpu", "gemm.sgemm", &e); !ok || err != nil || e != (entry{"avx512", 432}) {
		t.Fatalf("Lookup = %v, %v, %+v", ok, err, e)
	}
	if ok, _ := f.Lookup("other-cpu", "gemm.sgemm", &e); ok {
		t.Error("entry found for another CPU")
	}
	f.CPUs["cpu"]["bad"] = []byte(`{"kernel": 5}`)
	if _, err := f.Lookup("cpu", "bad", &e); err == nil || !strings.Contains(err.Error(), "entry bad") {
		t.Errorf("Lookup of a malformed entry: %v", err)
	}
	for _, tc := range []struct {
		key, name string
		v         any
	}{{"", "x", entry{}}, {"k", "", entry{}}, {"k", "x", 3}, {"k", "x", []int{1}}, {"k", "x", func() {}}} {
		if err := f.Set(tc.key, tc.name, tc.v); err == nil {
			t.Errorf("Set(%q, %q, %T) succeeded", tc.key, tc.name, tc.v)
		}
	}
}

func TestStoreLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "wisdom.json")
	t.Setenv(Env, path)
	var e entry
	if ok, p, err := Load("cpu", "gemm.sgemm", &e); ok || err != nil || p != path {
		t.Fatalf("Load without a file = %v, %q, %v", ok, p, err)
	}
	if _, replaced, err := Store("cpu", "gemm.sgemm", entry{"avx2", 256}); err != nil || replaced != nil {
		t.Fatalf("Store: %v, %v", replaced, err)
	}
	if _, _, err := Store("other", "gemm.sgemm", entry{"avx512", 384}); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := Load("cpu", "gemm.sgemm", &e); !ok || err != nil || e != (entry{"avx2", 256}) {
		t.Fatalf("Load = %v, %v, %+v", ok, err, e)
	}
	if ok, _, _ := Load("other", "gemm.sgemm", &e); !ok || e.KC != 384 {
		t.Fatalf("the other CPU's entry was lost: %+v", e)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "sub", ".*tmp*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}

	// A corrupt file: Load reports it naming the file; Store replaces it.
	if err := os.WriteFile(path, []byte("{corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := Load("cpu", "gemm.sgemm", &e); ok || err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a corrupt file = %v, %v", ok, err)
	}
	if _, replaced, err := Store("cpu", "gemm.sgemm", entry{"avx512", 432}); err != nil || replaced == nil {
		t.Fatalf("Store over a corrupt file: replaced %v, err %v", replaced, err)
	}
	if ok, _, err := Load("cpu", "gemm.sgemm", &e); !ok || err != nil || e.KC != 432 {
		t.Fatalf("Load after the replacement = %v, %v, %+v", ok, err, e)
	}

	// Disabled: nothing read or written.
	t.Setenv(Env, "off")
	if ok, p, err := Load("cpu", "gemm.sgemm", &e); ok || p != "" || err != nil {
		t.Errorf("Load with wisdom off = %v, %q, %v", ok, p, err)
	}
	if p, _, err := Store("cpu", "gemm.sgemm", e); p != "" || err != nil {
		t.Errorf("Store with wisdom off = %q, %v", p, err)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); err == nil {
		t.Error("reading a directory succeeded")
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, maxSize+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("reading a huge file: %v", err)
	}
}

// TestStoreConcurrent stores entries from many writers at once, as
// processes tuning at the same time do (each Store opens its own lock,
// which conflicts as two processes' do): every entry is kept.
func TestStoreConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "wisdom.json")
	t.Setenv(Env, path)
	const writers = 16
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := Store("cpu-key", fmt.Sprintf("entry%d", i), map[string]int{"i": i}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range writers {
		var v map[string]int
		found, _, err := Load("cpu-key", fmt.Sprintf("entry%d", i), &v)
		if err != nil || !found || v["i"] != i {
			t.Errorf("entry%d: found %v, %v, %v", i, found, v, err)
		}
	}
}
