// Package gentest holds generated files to their generator in tests.
package gentest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Check runs `go run generator -out DIR` in the test's package directory
// into a temporary DIR and compares every file it writes with the
// committed one beside the generator, so that an edit to the generator, or
// by hand to its output, cannot go unnoticed. It finds the go command
// through GOROOT, not PATH, and skips under -short or without it.
func Check(t *testing.T, generator string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	dir := t.TempDir()
	if out, err := exec.Command(goCmd, "run", generator, "-out", dir).CombinedOutput(); err != nil {
		t.Fatalf("go run %s: %v\n%s", generator, err, out)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("%s wrote nothing", generator)
	}
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f.Name())
		if err != nil {
			t.Errorf("%s: generated but not committed: %v", f.Name(), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what %s writes: run go run %s in this package's directory", f.Name(), generator, generator)
		}
	}
}
