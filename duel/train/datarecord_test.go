package train

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/imagetest"
)

// TestDataRecord trains a run on a folder dataset, which config.json
// records (trained_on), then changes its training split: a class added (which
// renumbers the classes), images added, an image replaced. Resuming the
// run refuses every change, naming it; opening the run's dataset to
// evaluate it refuses a change of classes or size; the run's
// normalisation stays the recorded one whatever the folder holds now.
func TestDataRecord(t *testing.T) {
	for _, tc := range []struct {
		name       string
		change     func(t *testing.T, dir string)
		resumeErr  string // "" = resumes
		datasetErr string // "" = the run's dataset opens
	}{
		{"unchanged", func(*testing.T, string) {}, "", ""},
		{"class added", func(t *testing.T, dir string) {
			imagetest.WriteFolder(t, dir, nil, []string{"aa"}, 2, 32)
		}, `its classes are ["a" "aa" "b" "c"], the run trained on ["a" "b" "c"]`, `its classes are ["a" "aa" "b" "c"]`},
		{"images added", func(t *testing.T, dir string) {
			imagetest.WriteFolder(t, dir, nil, []string{"a"}, 9, 32)
		}, "its training split has 25 images, the run trained on 24", "its training split has 25 images"},
		{"first image resized", func(t *testing.T, dir string) {
			imagetest.WriteFolder(t, dir, nil, []string{"a"}, 1, 16) // a/0.png, read first, now 16x16
		}, "its training images are 16x16, the run trained on 32x32", "its training images are 16x16"},
		{"image replaced", func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, "c", "0.png"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "a", "0.png"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "its training images are normalised with mean", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			imgs := imagetest.WriteFolder(t, filepath.Join(root, "imgs"), []string{"train", "test"}, []string{"a", "b", "c"}, 8, 32)
			c := tinyConfig(t, "moco")
			c.Dataset, c.Data, c.Steps, c.KNNEvery = "folder", imgs, 1, 0
			out := filepath.Join(root, "run")
			if _, err := Train(context.Background(), c, Options{Out: out}); err != nil {
				t.Fatal(err)
			}
			cfg, err := ReadConfig(out)
			if err != nil {
				t.Fatal(err)
			}
			rec := cfg.TrainedOn
			if rec == nil || !slices.Equal(rec.Classes, []string{"a", "b", "c"}) || rec.Images != 24 || rec.Height != 32 || rec.Width != 32 || len(rec.Mean) != 3 || len(rec.Std) != 3 {
				t.Fatalf("config.json's trained_on: %+v", rec)
			}
			tc.change(t, filepath.Join(imgs, "train"))

			opts := Options{Out: out, Resume: true}
			cfg.Steps = 2
			_, err = Train(context.Background(), cfg, opts)
			check(t, "resume", err, tc.resumeErr, out, imgs)

			run, err := LoadRunOn(out, -1, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			for _, train := range []bool{true, false} {
				_, err = run.OpenDataset(train)
				want := tc.datasetErr
				if !train && (strings.Contains(want, "images") || strings.Contains(want, "16x16")) {
					want = "" // the test split's size and image size are not recorded
				}
				check(t, "the run's dataset", err, want, out, imgs)
			}
			mean, std, err := run.Normalization()
			if err != nil || !slices.Equal(mean, rec.Mean) || !slices.Equal(std, rec.Std) {
				t.Errorf("normalisation %v %v, %v; want the recorded %v %v", mean, std, err, rec.Mean, rec.Std)
			}
		})
	}
}

// check compares err with the error wanted: none for want "", else one
// saying want and naming the run's directory and its data.
func check(t *testing.T, what string, err error, want, run, data string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", what, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want one saying %q", what, want)
	case want != "":
		for _, w := range []string{want, run, "--data " + data, "restore the data it trained on"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", what, err, w)
			}
		}
	}
}

// TestClassWithoutTrainingImages trains on a folder dataset one of whose
// classes has images in test/ only: refused, naming the class, where the
// sampler said "sampler: sampler: class 2 has probability 0.25".
func TestClassWithoutTrainingImages(t *testing.T) {
	root := t.TempDir()
	imgs := imagetest.WriteFolder(t, filepath.Join(root, "imgs"), []string{"train", "test"}, []string{"a", "b"}, 4, 32)
	imagetest.WriteFolder(t, filepath.Join(imgs, "test"), nil, []string{"c"}, 2, 32)
	c := tinyConfig(t, "moco")
	c.Dataset, c.Data, c.Steps, c.KNNEvery = "folder", imgs, 1, 0
	_, err := Train(context.Background(), c, Options{Out: filepath.Join(root, "run")})
	want := `--dataset folder: the training split has no image of class 2 ("c"), expected images of every class`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "sampler: sampler:") {
		t.Errorf("error %v, want %q", err, want)
	}
}
