package train

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestConfigDataAbsolute checks that a run started with a relative --data
// records the directory absolutely in config.json, so that eval, analyze
// and --resume find the data from any working directory.
func TestConfigDataAbsolute(t *testing.T) {
	root := t.TempDir()
	for _, class := range []string{"a", "b"} {
		dir := filepath.Join(root, "imgs", class)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			img := image.NewRGBA(image.Rect(0, 0, 32, 32))
			for p := range img.Pix {
				img.Pix[p] = uint8(37*i + 11*p)
			}
			img.Set(0, 0, color.RGBA{A: 255})
			f, err := os.Create(filepath.Join(dir, string(rune('0'+i))+".png"))
			if err != nil {
				t.Fatal(err)
			}
			if err := png.Encode(f, img); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
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
