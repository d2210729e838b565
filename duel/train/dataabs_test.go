package train

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/duel-ssl/duel/internal/imagetest"
)

// TestConfigDataAbsolute checks that a run started with a relative --data
// records the directory absolutely in config.json, so that eval, analyze
// and --resume find the data from any working directory.
func TestConfigDataAbsolute(t *testing.T) {
	root := t.TempDir()
	imagetest.WriteFolder(t, filepath.Join(root, "imgs"), nil, []string{"a", "b"}, 8, 32)
	t.Chdir(root)
	c := tinyConfig(t, "dmoco")
	c.Dataset, c.Data, c.Steps = "folder", "imgs", 0
	out := filepath.Join(root, "run")
	if _, err := Train(context.Background(), c, Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs("imgs"); got.Data != want {
		t.Errorf("config.json's data %q, want %q", got.Data, want)
	}
	if c.Data != "imgs" {
		t.Errorf("Train changed the caller's config: data %q", c.Data)
	}
}
