package conv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestGeneratedKernels runs gen_kernels.go into a temporary directory and
// compares every file it writes with the committed one, so that an edit to
// the generator (or by hand to its output, whose VDPBF16PS are raw bytes)
// cannot go unnoticed.
func TestGeneratedKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go") // as tensor's TestGeneratedUpToDate: found without PATH
	if _, err := os.Stat(goCmd); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	cmd := exec.Command(goCmd, "run", "gen_kernels.go", "-out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen_kernels.go: %v\n%s", err, out)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("gen_kernels.go wrote nothing")
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
			t.Errorf("%s differs from what gen_kernels.go writes: run go run gen_kernels.go in kernels/conv", f.Name())
		}
	}
}
