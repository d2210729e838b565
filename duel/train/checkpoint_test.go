package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
)

// TestMemoryConfigMismatch edits a trained dmoco run's config.json by hand
// (memory_size, policy, admission, max_age, safe_update): resuming it and loading it (eval, analyze,
// embed) must refuse the checkpoint's memory, naming memory.bin, the key of
// config.json, the checkpoint's value and the config's, rather than keep
// the checkpoint's memory silently.
func TestMemoryConfigMismatch(t *testing.T) {
	src := t.TempDir()
	c := tinyConfig(t, "dmoco")
	c.Steps, c.MemorySize, c.KNNEvery = 2, 32, 0
	if _, err := Train(context.Background(), c, tinyOptions(src)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		edit func(*Config)
		want []string
	}{
		{"memory_size", func(c *Config) { c.MemorySize = 64 }, []string{"a memory of 32 rows", "config.json says memory_size 64", "put back memory_size 32"}},
		{"policy", func(c *Config) { c.Policy = "fifo" }, []string{`a memory of policy "duel"`, `says policy "fifo"`}},
		{"admission", func(c *Config) { c.Admission = "compete" }, []string{`a memory of admission "protected"`, `says admission "compete"`, `put back admission "protected"`}},
		{"max_age", func(c *Config) { c.MaxAge = 5 }, []string{"a maximum row age of 0", "says max_age 5"}},
		{"safe_update", func(c *Config) { c.SafeUpdate = true }, []string{"the safe update off", "says safe_update true"}},
	} {
		t.Run(tc.key, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			cfg, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(cfg)
			if err := WriteConfig(dir, cfg); err != nil {
				t.Fatal(err)
			}
			want := append([]string{filepath.Join(dir, CheckpointDir, memoryFile), filepath.Join(dir, ConfigFile)}, tc.want...)
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Errorf("%s: no error, want one about %s", what, tc.key)
					return
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not mention %q", what, err, w)
					}
				}
			}
			opts := tinyOptions(dir)
			opts.Resume = true
			cfg.Steps = 4
			_, err = Train(context.Background(), cfg, opts)
			check("resume", err)
			_, err = LoadRunOn(dir, -1, "cpu")
			check("load", err)
		})
	}
	// The run as trained still loads and resumes.
	if _, err := LoadRunOn(src, -1, "cpu"); err != nil {
		t.Fatal(err)
	}
	resumeTrain(t, c, src, 3)
}

// TestRunDirOf checks the run directory found from each place a checkpoint
// is loaded from, for the config.json an error names.
func TestRunDirOf(t *testing.T) {
	for _, tc := range []struct{ ckpt, want string }{
		{filepath.Join("r", CheckpointDir), "r"},
		{filepath.Join("a", "r", checkpointPrev), filepath.Join("a", "r")},
		{filepath.Join("r", KeptDir, KeptName(100)), "r"},
	} {
		if got := runDirOf(tc.ckpt); got != tc.want {
			t.Errorf("runDirOf(%q) = %q, want %q", tc.ckpt, got, tc.want)
		}
	}
}

// TestCheckpointMemoryStreamed: memory.bin, streamed into the checkpoint's
// file and from it, holds the memory's MarshalBinary bytes, for a memory
// of each policy (DUEL's carried state built by the updates), and a run
// loaded from it holds the same memory; a memory.bin with a byte changed
// is refused as damaged, naming the file.
func TestCheckpointMemoryStreamed(t *testing.T) {
	for _, policy := range memory.PolicyNames() {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			c := tinyConfig(t, "moco")
			c.Steps, c.MemorySize, c.KNNEvery, c.Policy = 6, 40, 0, policy
			if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, CheckpointDir, memoryFile)
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			run, err := LoadRunOn(dir, -1, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			if run.Memory.Len() != 40 || run.Memory.Policy().Name() != policy {
				t.Fatalf("loaded a memory of %d rows, policy %s", run.Memory.Len(), run.Memory.Policy().Name())
			}
			back, err := run.Memory.MarshalBinary()
			if err != nil || !bytes.Equal(back, file) {
				t.Fatalf("the memory loaded encodes to %d bytes (%v), memory.bin holds %d: equal %v", len(back), err, len(file), bytes.Equal(back, file))
			}
			var again bytes.Buffer
			if _, err := run.Memory.WriteTo(&again); err != nil || !bytes.Equal(again.Bytes(), file) {
				t.Fatalf("WriteTo of the memory loaded: %d bytes (%v), memory.bin holds %d", again.Len(), err, len(file))
			}
			file[len(file)/2] ^= 1
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = LoadRunOn(dir, -1, "cpu")
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "checksum mismatch") ||
				!strings.Contains(err.Error(), "expected a complete checkpoint") {
				t.Fatalf("a corrupted memory.bin: %v", err)
			}
		})
	}
}
