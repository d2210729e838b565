package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfile writes a Go CPU profile of a command where
// DUEL_CPU_PROFILE says, leaving no temporary file, and names the
// variable when the file cannot be written.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "step.prof")
	t.Setenv(envCPUProfile, path)
	if code, _, stderr := runCLI("bench", "step", "--arch", "resnet18-w4", "--batch", "4", "--steps", "1", "--warmup", "0"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) { // pprof's gzipped protobuf
		t.Errorf("%s: %d bytes starting %x, want a gzipped pprof profile", path, len(b), b[:min(len(b), 4)])
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%s holds %d files, want the profile alone", dir, len(ents))
	}

	t.Setenv(envCPUProfile, filepath.Join(dir, "missing", "p.prof"))
	code, _, stderr := runCLI("data", "info", "default")
	if code == 0 || !strings.Contains(stderr, envCPUProfile+"=") || !strings.Contains(stderr, "missing") {
		t.Errorf("unwritable profile: exit %d, stderr %q", code, stderr)
	}
}
