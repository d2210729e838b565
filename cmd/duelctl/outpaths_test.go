package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/dirlock"
	"github.com/duel-ssl/duel/internal/npy"
)

// TestOutPaths checks that every command writing a directory refuses, in
// one line and before any work, an --out (or --report) that is a file or
// lies below one, and accepts directories that exist or can be made.
func TestOutPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	feats := filepath.Join(dir, "f.npy")
	rows := make([]float32, 40*4)
	for i := range rows {
		rows[i] = float32(i%7) - 3
	}
	if err := npy.WriteFile(feats, &npy.Array{Shape: []int{40, 4}, Float32: rows}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"new", checkOutDir("out", filepath.Join(dir, "new", "deeper")), ""},
		{"existing", checkOutDir("out", dir), ""},
		{"file", checkOutDir("out", file), `--out: got "` + file + `", expected a directory (it is a file)`},
		{"below a file", checkOutDir("out", filepath.Join(file, "a", "b")), `expected a directory that can be made (` + file + ` is a file)`},
		{"out file in a directory", checkOutFile("out", filepath.Join(dir, "y.npy")), ""},
		{"out file a directory", checkOutFile("out", dir), "expected the path of a file to write, not a directory"},
		{"out file below a file", checkOutFile("out", filepath.Join(file, "y.npy")), "is a file)"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, tc.err, tc.want)
		}
	}
	below := filepath.Join(file, "out")
	for _, args := range [][]string{
		{"train", "--preset", "tiny", "--steps", "1", "--out", below},
		{"memory", "replay", "--features", feats, "--size", "8", "--batch", "4", "--out", below},
		{"memory", "stream", "--out", below},
		{"reproduce", "--preset", "smoke", "--out", below},
		{"reproduce", "--preset", "smoke", "--out", filepath.Join(dir, "r"), "--report", below},
	} {
		code, stdout, stderr := runCLI(args...)
		if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "duelctl: --") ||
			!strings.Contains(stderr, "expected a directory that can be made ("+file+" is a file)") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
		if stdout != "" {
			t.Errorf("%v: printed %q before refusing", args, stdout)
		}
	}
}

// TestLockOutputs checks that lockOutputs refuses while another holder
// has the lock, naming the command, and takes it once released; and that
// removeDescriptors removes the descriptors and nothing else.
func TestLockOutputs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"report.md", "analysis.json", "plot.png"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	held, err := dirlock.TryLockFile(filepath.Join(dir, analyzeLock))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockOutputs(dir, analyzeLock, "analyze"); !errors.Is(err, dirlock.ErrHeld) ||
		!strings.Contains(err.Error(), "another duelctl analyze is writing into "+dir) {
		t.Errorf("while held: %v", err)
	}
	held()
	release, err := lockOutputs(dir, analyzeLock, "analyze")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := removeDescriptors(dir, "report.md", "analysis.json"); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{"report.md": false, "analysis.json": false, "plot.png": true} {
		if _, err := os.Stat(filepath.Join(dir, f)); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", f, err == nil, want)
		}
	}
}
