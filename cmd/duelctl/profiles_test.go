package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfiles writes a Go CPU profile (DUEL_CPU_PROFILE), an execution
// trace (DUEL_TRACE), a heap profile (DUEL_HEAP_PROFILE) or several of a
// command where the variables say,
// leaving no temporary file, and names the variable when its file cannot
// be written.
func TestProfiles(t *testing.T) {
	gzipped := func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1f, 0x8b}) } // pprof's gzipped protobuf
	traced := func(b []byte) bool { return bytes.HasPrefix(b, []byte("go 1.")) }     // "go 1.N trace" header
	for _, tc := range []struct {
		name  string
		files map[string]func([]byte) bool // variable -> check of its file's content
	}{
		{"cpu", map[string]func([]byte) bool{envCPUProfile: gzipped}},
		{"trace", map[string]func([]byte) bool{envTrace: traced}},
		{"heap", map[string]func([]byte) bool{envHeapProfile: gzipped}},
		{"all", map[string]func([]byte) bool{envCPUProfile: gzipped, envTrace: traced, envHeapProfile: gzipped}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(envCPUProfile, "")
			t.Setenv(envTrace, "")
			t.Setenv(envHeapProfile, "")
			for env := range tc.files {
				t.Setenv(env, filepath.Join(dir, env+".out"))
			}
			if code, _, stderr := runCLI("bench", "step", "--arch", "resnet18-w4", "--batch", "4", "--steps", "1", "--warmup", "0"); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for env, ok := range tc.files {
				path := filepath.Join(dir, env+".out")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !ok(b) {
					t.Errorf("%s: %d bytes starting %q, not what %s writes", path, len(b), b[:min(len(b), 8)], env)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != len(tc.files) {
				t.Errorf("%s holds %d files, want the %d asked for alone", dir, len(ents), len(tc.files))
			}
		})
	}
	for _, env := range []string{envCPUProfile, envTrace, envHeapProfile} {
		t.Run("unwritable "+env, func(t *testing.T) {
			t.Setenv(envCPUProfile, "")
			t.Setenv(envTrace, "")
			t.Setenv(envHeapProfile, "")
			t.Setenv(env, filepath.Join(t.TempDir(), "missing", "p.out"))
			code, _, stderr := runCLI("data", "info", "default")
			if code == 0 || !strings.Contains(stderr, env+"=") || !strings.Contains(stderr, "missing") {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
		})
	}
}
