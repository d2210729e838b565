package atomicfile

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	for _, s := range []string{"first", "second, longer", ""} {
		if err := WriteFile(path, []byte(s)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != s {
			t.Fatalf("read back %q, %v; want %q", got, err, s)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("mode %v, %v; want 0644", fi.Mode(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.txt")
	if err := WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("encoder failed")
	tests := []struct {
		name string
		path string
		fn   func(io.Writer) error
		want error
	}{
		{"write error", path, func(w io.Writer) error { w.Write([]byte("partial")); return cause }, cause},
		{"missing directory", filepath.Join(dir, "no", "such", "x"), func(io.Writer) error { return nil }, os.ErrNotExist},
	}
	for _, tc := range tests {
		err := Write(tc.path, tc.fn)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: error %v, want one naming %s and wrapping %v", tc.name, err, tc.path, tc.want)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("failed write changed the file to %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	if err := WriteJSON(path, map[string]int{"b": 2, "a": 1}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{\n  \"a\": 1,\n  \"b\": 2\n}\n" {
		t.Fatalf("wrote %q", got)
	}
	var uerr *json.UnsupportedValueError
	if err := WriteJSON(path, math.NaN()); !errors.As(err, &uerr) || !strings.Contains(err.Error(), path) {
		t.Fatalf("NaN: error %v, want a json.UnsupportedValueError naming %s", err, path)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

// TestWriteRemovesStaleTemps checks that a write removes the temporary
// files of its path that a killed writer left (untouched for an hour), and
// keeps a fresh one (a writer at work) and other files.
func TestWriteRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	old := time.Now().Add(-2 * staleTemp)
	files := map[string]bool{ // name: kept
		".model.safetensors.tmp123": false,
		".model.safetensors.tmp456": true, // fresh
		".other.tmp789":             true,
		"model.safetensors.tmp":     true, // not a temporary file's name
	}
	for name, kept := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !kept || name == ".other.tmp789" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	for name, kept := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
}
