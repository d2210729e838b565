package cuda

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// kernelSource returns the text of kernels/cuda/file (the tests run in
// package cuda's directory).
func kernelSource(t *testing.T, file string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "kernels", "cuda", file))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// kernelDefine returns the number of src's line "#define name N", src
// being file's text; a source without that line fails the test.
func kernelDefine(t *testing.T, src []byte, file, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^#define ` + regexp.QuoteMeta(name) + ` (\d+)\b`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("%s lacks #define %s", file, name)
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		t.Fatalf("%s: #define %s %s: %v", file, name, m[1], err)
	}
	return n
}
