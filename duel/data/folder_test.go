package data

import (
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// solidPNG returns a 4x4 PNG of one grey level.
func solidPNG(v uint8) []byte {
	img := image.NewGray(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = v
	}
	return encodePNG(img)
}

// TestFolderClassesAcrossSplits checks that both splits of a folder dataset
// number the classes by the sorted union of their class folders, so that a
// label means the same class whichever split lacks a folder.
func TestFolderClassesAcrossSplits(t *testing.T) {
	for _, c := range []struct {
		name        string
		files       []string // images to write, DIR-relative
		classes     []string // the dataset's classes, both splits
		train, test []int32  // the labels of each split, in file order
	}{
		{"test lacks a class", []string{"train/a/1.png", "train/b/2.png", "test/b/3.png", "test/b/4.png"},
			[]string{"a", "b"}, []int32{0, 1}, []int32{1, 1}},
		{"train lacks a class", []string{"train/b/1.png", "test/a/2.png", "test/b/3.png"},
			[]string{"a", "b"}, []int32{1}, []int32{0, 1}},
		{"disjoint classes", []string{"train/c/1.png", "test/a/2.png"},
			[]string{"a", "c"}, []int32{1}, []int32{0}},
		{"val/ as the test split", []string{"train/x/1.png", "train/y/2.png", "val/y/3.png"},
			[]string{"x", "y"}, []int32{0, 1}, []int32{1}},
		{"test/ before val/", []string{"train/x/1.png", "test/y/2.png", "val/z/3.png"},
			[]string{"x", "y"}, []int32{0}, []int32{1}},
		{"same classes", []string{"train/a/1.png", "train/b/2.png", "test/a/3.png", "test/b/4.png"},
			[]string{"a", "b"}, []int32{0, 1}, []int32{0, 1}},
		{"one split", []string{"dog/1.png", "cat/2.png", "cat/3.png"},
			[]string{"cat", "dog"}, []int32{0, 0, 1}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, f := range c.files {
				writeFile(t, dir, f, solidPNG(uint8(10*i)))
			}
			for _, train := range []bool{true, false} {
				want := c.train
				if !train {
					want = c.test
				}
				d, err := Open("folder", dir, train)
				if want == nil {
					if err == nil || !strings.Contains(err.Error(), "no test/ or val/") {
						t.Fatalf("train=%v: error %v, want one about the missing test split", train, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("train=%v: %v", train, err)
				}
				if !slices.Equal(d.Classes, c.classes) || !slices.Equal(d.Labels, want) {
					t.Fatalf("train=%v: classes %v labels %v, want %v %v", train, d.Classes, d.Labels, c.classes, want)
				}
			}
		})
	}
}

// TestFolderLayoutErrors checks the layouts a folder dataset refuses: each
// error names the folder, what was found and the expected layouts.
func TestFolderLayoutErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		files []string // images to write; a name ending in / is an empty directory
		path  string   // DIR-relative path passed as the dataset directory
		train bool
		want  []string
	}{
		{"class folders next to test/", []string{"a/1.png", "test/a/2.png"}, "", true,
			[]string{"has test/ but no train/", "expected DIR/CLASS/*.png, or DIR/train/CLASS/*.png"}},
		{"class folders next to val/", []string{"a/1.png", "val/a/2.png"}, "", false,
			[]string{"has val/ but no train/", "DIR/train/CLASS/*.png"}},
		{"no class folders", []string{"readme.png"}, "", true,
			[]string{"no class sub-directories", "expected DIR/CLASS/*.png"}},
		{"train/ without class folders", []string{"train/readme.png", "test/a/1.png"}, "", true,
			[]string{"train has no class sub-directories", "expected"}},
		{"test/ without class folders", []string{"train/a/1.png", "test/readme.png"}, "", false,
			[]string{"test has no class sub-directories", "expected"}},
		{"empty class folder", []string{"train/a/1.png", "test/a/"}, "", false,
			[]string{filepath.Join("test", "a") + " has no PNG, JPEG or GIF image", "expected at least one"}},
		{"no test split", []string{"a/1.png"}, "", false,
			[]string{"no test/ or val/", "expected DIR/train/CLASS/*.png with DIR/test/CLASS/*.png"}},
		{"missing directory", nil, "nope", true,
			[]string{"nope", "no such file", "expected DIR/CLASS/*.png"}},
		{"a file", []string{"f.png"}, "f.png", true,
			[]string{"f.png is a file", "expected DIR/CLASS/*.png"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range c.files {
				if strings.HasSuffix(f, "/") {
					if err := os.MkdirAll(filepath.Join(dir, f), 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				writeFile(t, dir, f, solidPNG(1))
			}
			_, err := Open("folder", filepath.Join(dir, c.path), c.train)
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestFolderSymlinkedClass checks that a class folder reached through a
// symbolic link counts, as in torchvision.
func TestFolderSymlinkedClass(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	writeFile(t, dir, "train/a/1.png", solidPNG(1))
	writeFile(t, elsewhere, "b/2.png", solidPNG(2))
	if err := os.Symlink(filepath.Join(elsewhere, "b"), filepath.Join(dir, "train", "b")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	d, err := Open("folder", dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Classes, []string{"a", "b"}) || !slices.Equal(d.Labels, []int32{0, 1}) {
		t.Fatalf("classes %v labels %v", d.Classes, d.Labels)
	}
}
