package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeDamagedCheckpoint checks that resuming from a checkpoint with
// a truncated or missing file is refused, naming the file and what a
// checkpoint holds.
func TestResumeDamagedCheckpoint(t *testing.T) {
	src := t.TempDir()
	c := tinyConfig(t, "dmoco")
	c.Steps = 1
	if _, err := Train(context.Background(), c, tinyOptions(src)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file   string
		remove bool
		want   string
	}{
		{stateFile, false, "expected a complete checkpoint"}, {stateFile, true, "no checkpoint (expected checkpoint/state.json)"},
		{ModelFile, false, "expected a complete checkpoint"}, {optimizerFile, true, "expected a complete checkpoint"},
		{memoryFile, true, "expected a complete checkpoint"}, {memoryFile, false, "expected a complete checkpoint"},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, CheckpointDir, tc.file)
		var err error
		if tc.remove {
			err = os.Remove(p)
		} else {
			var b []byte
			if b, err = os.ReadFile(p); err == nil {
				err = os.WriteFile(p, b[:len(b)/2], 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		opts := tinyOptions(dir)
		opts.Resume = true
		c.Steps = 2
		_, err = Train(context.Background(), c, opts)
		if err == nil || !strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (removed: %v): %v, want an error naming it and what a checkpoint holds", tc.file, tc.remove, err)
		}
	}
}
