package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	opts := tinyOptions(src)
	opts.Resume = true
	c.Steps = 3
	if _, err := Train(context.Background(), c, opts); err != nil {
		t.Fatal(err)
	}
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
