package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourceSHA256 checks the stamp: a file without local includes is
// stamped with its bytes' SHA-256, a file including a header changes stamp
// when the header (or one it includes) changes, and a missing header is an
// error.
func TestSourceSHA256(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.cu", "// k\nextern \"C\" __global__ void k() {}\n")
	got, err := SourceSHA256(plain)
	want := sha256.Sum256([]byte("// k\nextern \"C\" __global__ void k() {}\n"))
	if err != nil || got != hex.EncodeToString(want[:]) {
		t.Errorf("plain.cu: %s, %v; want %x", got, err, want)
	}

	src := write("k.cu", "#include \"a.cuh\"\n#include \"a.cuh\"\n// k\nextern \"C\" __global__ void k() {}\n")
	write("a.cuh", "#pragma once\n  #  include \"b.cuh\"\n")
	write("b.cuh", "// b\n")
	s1, err := SourceSHA256(src)
	if err != nil {
		t.Fatal(err)
	}
	if s1 == hex.EncodeToString(want[:]) {
		t.Error("k.cu's stamp ignores its header")
	}
	write("b.cuh", "// b, edited\n")
	s2, err := SourceSHA256(src)
	if err != nil || s2 == s1 {
		t.Errorf("editing a nested header: stamp %s -> %s, %v", s1, s2, err)
	}
	if err := os.Remove(filepath.Join(dir, "b.cuh")); err != nil {
		t.Fatal(err)
	}
	if _, err := SourceSHA256(src); err == nil || !strings.Contains(err.Error(), `#include "b.cuh"`) {
		t.Errorf("missing header: %v", err)
	}
}
